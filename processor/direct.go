package processor

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/pipeline"
	"github.com/sidestream/sidestream/processor/tasks"
	"github.com/sidestream/sidestream/topology"
	"github.com/sidestream/sidestream/wire"
)

// directTask is a task of a route without a repartition topic
// (repartition: false): what stage one would have written to the
// repartition topic goes straight to the task of the same partition.
type directTask interface {
	tasks.Task
	// keyed reports whether out has a partition to check: an assembly
	// part without an ID has none (stage two sends it to dirty).
	keyed(out *kgo.Record) bool
	// misplaced is the reason the input record goes to dirty when out's
	// key belongs to partition kp, not to part.
	misplaced(out *kgo.Record, kp, part int32) *pipeline.RecordError
	// stageTwo processes one record of the (virtual) repartition topic.
	stageTwo(e *engine, r *kgo.Record, tally *metrics.Tally) ([]*kgo.Record, error)
	// finish runs after the records of input partition topic/part (sp is
	// its progress, nil if none tracked; ok: no task failed), with the
	// task locked.
	finish(p *Processor, topic string, part int32, sp *srcProgress, ok bool, produce func(*kgo.Record), tally *metrics.Tally) error
}

// direct runs the window and assembly routes without a repartition topic
// inside one input partition's processing, in the same transaction. It
// holds each task's lock from its first record to finish.
type direct struct {
	p       *Processor
	part    int32
	tally   *metrics.Tally
	produce func(*kgo.Record)
	windows directSet[*windowTask]
	asm     directSet[*assemblyTask]
	err     error
}

// newDirect is the direct runner of one input partition, nil when no
// route is direct.
func (p *Processor) newDirect(part int32, tally *metrics.Tally, produce func(*kgo.Record)) *direct {
	if len(p.ws.direct)+len(p.as.direct) == 0 {
		return nil
	}
	d := &direct{p: p, part: part, tally: tally, produce: produce}
	d.windows.task, d.asm.task = p.windowTask, p.assemblyTask
	return d
}

// owns reports whether topic is a direct route's (virtual) repartition
// topic.
func (d *direct) owns(topic string) bool { return d.p.isDirect(topic) }

// process runs one record stage one addressed to a direct route's
// (virtual) repartition topic. in is the input record it came from.
func (d *direct) process(ctx context.Context, out, in *kgo.Record) {
	if d.err != nil {
		return // the batch aborts: nothing of it commits
	}
	if d.p.ws.direct[out.Topic] != nil {
		d.err = d.windows.process(ctx, d, out, in)
	} else {
		d.err = d.asm.process(ctx, d, out, in)
	}
}

// finish ends the input partition topic/part's processing (sp: its
// progress) for every task it reached, and releases them. The error is
// the first task failure: the batch aborts.
func (d *direct) finish(topic string, sp *srcProgress) error {
	d.err = d.windows.finish(d, topic, sp, d.err)
	d.err = d.asm.finish(d, topic, sp, d.err)
	return d.err
}

// directSet holds the tasks of one stage a direct runner reached.
type directSet[T directTask] struct {
	task  func(ctx context.Context, topic string, part int32) (T, error)
	tasks map[string]T
	hash  kgo.TopicPartitioner // built once: a partitioner's construction seeds a random source
}

func (s *directSet[T]) process(ctx context.Context, d *direct, out, in *kgo.Record) error {
	t, ok := s.tasks[out.Topic]
	if !ok {
		var err error
		if t, err = s.task(ctx, out.Topic, d.part); err != nil {
			return err
		}
		t.Locker().Lock()
		if s.tasks == nil {
			s.tasks = map[string]T{}
		}
		s.tasks[out.Topic] = t
	}
	out.Partition, out.Offset = d.part, in.Offset
	if n := d.p.ws.partitions.Load(); n > 0 && t.keyed(out) {
		if s.hash == nil {
			s.hash = d.p.part.ForTopic(out.Topic)
		}
		if kp := hashPartition(s.hash, out, int(n)); kp != d.part {
			// The input record itself goes to dirty (a redrive after the
			// input is fixed brings it back through every route).
			d.tally.Consumed[out.Topic]++
			d.produce(d.p.eng.Dirty(in, t.misplaced(out, kp, d.part), d.tally))
			return nil
		}
	}
	recs, err := t.stageTwo(d.p.eng, out, d.tally)
	if err != nil {
		return err // the batch aborts: nothing of it commits
	}
	for _, r := range recs {
		d.produce(r)
	}
	return nil
}

func (s *directSet[T]) finish(d *direct, topic string, sp *srcProgress, err error) error {
	for _, t := range s.tasks {
		if ferr := t.finish(d.p, topic, d.part, sp, err == nil, d.produce, d.tally); err == nil {
			err = ferr
		}
		t.Locker().Unlock()
	}
	return err
}

func (t *windowTask) keyed(*kgo.Record) bool { return true }

func (t *windowTask) misplaced(out *kgo.Record, kp, part int32) *pipeline.RecordError {
	return pipeline.NewRecordError(wire.StageWindow, wire.ReasonNotPartitioned,
		"route %q has repartition: false, but group key %q belongs to partition %d, not %d: the input is not partitioned by the group key (Kafka's murmur2 key hash)",
		t.route.rt.Name, out.Key, kp, part)
}

func (t *windowTask) stageTwo(e *engine, r *kgo.Record, tally *metrics.Tally) ([]*kgo.Record, error) {
	return e.processRepartitioned(r, t, tally)
}

// finish tells the task its input partition's progress (aligned: its
// only sources are this partition of each input) and publishes its
// gauges.
func (t *windowTask) finish(p *Processor, topic string, part int32, sp *srcProgress, ok bool, produce func(*kgo.Record), tally *metrics.Tally) error {
	now := time.Now()
	var err error
	if ok && sp != nil && sp.max != math.MinInt64 && t.route.rt.Window.Config.Watermark == topology.WatermarkAligned {
		src := sourceID(topic, part)
		t.heard(src)
		out, merr := t.op.Mark(src, sp.max)
		if merr != nil {
			err = fmt.Errorf("window state of route %q partition %d: %w", t.route.rt.Name, t.part, merr)
		}
		for _, r := range p.eng.windowResults(t.route.rt, out.Results, now, tally) {
			produce(r)
		}
	}
	t.lastRecord = now
	p.observeTask(t)
	return err
}

func (t *assemblyTask) keyed(out *kgo.Record) bool { return len(out.Key) > 0 }

func (t *assemblyTask) misplaced(out *kgo.Record, kp, part int32) *pipeline.RecordError {
	return pipeline.NewRecordError(wire.StageAssemble, wire.ReasonNotPartitionedByID,
		"route %q has repartition: false, but part %q's id %q belongs to partition %d, not %d: the input is not partitioned by the assembly id (Kafka's murmur2 key hash)",
		t.route.rt.Name, wire.String(out.Headers, wire.HeaderPart), out.Key, kp, part)
}

func (t *assemblyTask) stageTwo(e *engine, r *kgo.Record, tally *metrics.Tally) ([]*kgo.Record, error) {
	return e.processAssemblyRecord(r, t, time.Now(), tally)
}

// finish publishes the task's gauges.
func (t *assemblyTask) finish(p *Processor, _ string, _ int32, _ *srcProgress, _ bool, _ func(*kgo.Record), _ *metrics.Tally) error {
	p.observeAssemblyTask(t)
	return nil
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
