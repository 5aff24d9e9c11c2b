package processor

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/pipeline"
	"github.com/sidestream/sidestream/wire"
)

// directAssemblies runs the assembly routes without a repartition topic
// inside one input partition's processing: each part stage one would have
// written to the repartition topic goes straight to the task of the same
// partition, in the same transaction. It holds each task's lock from its
// first part to finish.
type directAssemblies struct {
	p       *Processor
	part    int32
	tally   *metrics.Tally
	produce func(*kgo.Record)
	tasks   map[string]*assemblyTask
	hash    kgo.TopicPartitioner // built once: a partitioner's construction seeds a random source
	err     error
}

// process runs one part stage one addressed to a direct route's (virtual)
// repartition topic. in is the input record it came from.
func (d *directAssemblies) process(ctx context.Context, out, in *kgo.Record) {
	if d.err != nil {
		return // the batch aborts: nothing of it commits
	}
	t := d.tasks[out.Topic]
	if t == nil {
		var err error
		if t, err = d.p.assemblyTask(ctx, out.Topic, d.part); err != nil {
			d.err = err
			return
		}
		t.mu.Lock()
		if d.tasks == nil {
			d.tasks = map[string]*assemblyTask{}
		}
		d.tasks[out.Topic] = t
	}
	out.Partition, out.Offset = d.part, in.Offset
	// An empty key (no ID) has no partition: the assembly stage sends it
	// to dirty with its own reason.
	if n := d.p.ws.partitions.Load(); n > 0 && len(out.Key) > 0 {
		if d.hash == nil {
			d.hash = d.p.part.ForTopic(out.Topic)
		}
		if kp := hashPartition(d.hash, out, int(n)); kp != d.part {
			// The input record itself goes to dirty (a redrive after the
			// input is fixed brings it back through every route).
			d.tally.Consumed[out.Topic]++
			d.produce(d.p.eng.Dirty(in, pipeline.NewRecordError(wire.StageAssemble, wire.ReasonNotPartitionedByID,
				"route %q has repartition: false, but part %q's id %q belongs to partition %d, not %d: the input is not partitioned by the assembly id (Kafka's murmur2 key hash)",
				t.route.rt.Name, wire.String(out.Headers, wire.HeaderPart), out.Key, kp, d.part), d.tally))
			return
		}
	}
	recs, err := d.p.eng.processAssemblyRecord(out, t, time.Now(), d.tally)
	if err != nil {
		d.err = err // the batch aborts: nothing of it commits
		return
	}
	for _, r := range recs {
		d.produce(r)
	}
}

// finish publishes the tasks' gauges and releases them.
func (d *directAssemblies) finish() error {
	for _, t := range d.tasks {
		d.p.observeAssemblyTask(t)
		t.mu.Unlock()
	}
	return d.err
}

// hashPartition is the partition of a keyed record under tp: the one
// state queries compute (keyPartition), Kafka's murmur2 of the key. The
// router's default partitioner is a backup partitioner, whose Partition
// must not be called.
func hashPartition(tp kgo.TopicPartitioner, r *kgo.Record, n int) int32 {
	if bp, ok := tp.(kgo.TopicBackupPartitioner); ok {
		return int32(bp.PartitionByBackup(r, n, nil))
	}
	return int32(tp.Partition(r, n))
}
