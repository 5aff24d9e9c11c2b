package stagetwo

import (
	"context"
	"fmt"
	"math"

	"github.com/sidestream/sidestream/internal/plan"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/tasks"
	"github.com/sidestream/sidestream/internal/wire"
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
	misplaced(out *kgo.Record, kp, part int32) *stageone.RecordError
	// begin runs once the task is locked for the input partition's batch.
	begin()
	// stageTwo processes one record of the (virtual) repartition topic.
	stageTwo(e *recordRunner, r *kgo.Record, tally *metrics.Tally) ([]*kgo.Record, error)
	// finish runs after the records of input partition topic/part (max is
	// its maximum event time, nil if none tracked; ok: no task failed),
	// with the task locked.
	finish(s *Stage, topic string, part int32, max *int64, ok bool, produce func(*kgo.Record), tally *metrics.Tally) error
}

// Direct runs the window and assembly routes without a repartition topic
// inside one input partition's processing, in the same transaction. It
// holds each task's lock from its first record to finish.
type Direct struct {
	s       *Stage
	part    int32
	tally   *metrics.Tally
	produce func(*kgo.Record)
	windows directSet[*windowTask]
	asm     directSet[*assemblyTask]
	err     error
}

// NewDirect is the direct runner of one input partition, nil when no
// route is direct.
func (s *Stage) NewDirect(part int32, tally *metrics.Tally, produce func(*kgo.Record)) *Direct {
	if len(s.ws.direct)+len(s.as.direct) == 0 {
		return nil
	}
	d := &Direct{s: s, part: part, tally: tally, produce: produce}
	d.windows.task, d.asm.task = s.windowTask, s.assemblyTask
	return d
}

// Owns reports whether topic is a direct route's (virtual) repartition
// topic.
func (d *Direct) Owns(topic string) bool { return d.s.IsDirect(topic) }

// Process runs one record stage one addressed to a direct route's
// (virtual) repartition topic. in is the input record it came from.
func (d *Direct) Process(ctx context.Context, out, in *kgo.Record) {
	if d.err != nil {
		return // the batch aborts: nothing of it commits
	}
	if d.s.ws.direct[out.Topic] != nil {
		d.err = d.windows.process(ctx, d, out, in)
	} else {
		d.err = d.asm.process(ctx, d, out, in)
	}
}

// Finish ends the input partition topic/part's processing (max: its
// maximum event time, nil if none tracked) for every task it reached, and
// releases them. The error is the first task failure: the batch aborts.
func (d *Direct) Finish(topic string, max *int64) error {
	d.err = d.windows.finish(d, topic, max, d.err)
	d.err = d.asm.finish(d, topic, max, d.err)
	return d.err
}

// directSet holds the tasks of one stage a direct runner reached.
type directSet[T directTask] struct {
	task  func(ctx context.Context, topic string, part int32) (T, error)
	tasks map[string]T
	hash  kgo.TopicPartitioner // built once: a partitioner's construction seeds a random source
}

func (ds *directSet[T]) process(ctx context.Context, d *Direct, out, in *kgo.Record) error {
	t, ok := ds.tasks[out.Topic]
	if !ok {
		var err error
		if t, err = ds.task(ctx, out.Topic, d.part); err != nil {
			return err
		}
		t.Locker().Lock()
		t.begin()
		if ds.tasks == nil {
			ds.tasks = map[string]T{}
		}
		ds.tasks[out.Topic] = t
	}
	out.Partition, out.Offset = d.part, in.Offset
	if n := d.s.ws.partitions.Load(); n > 0 && t.keyed(out) {
		if ds.hash == nil {
			ds.hash = d.s.part.ForTopic(out.Topic)
		}
		if kp := hashPartition(ds.hash, out, int(n)); kp != d.part {
			// The input record itself goes to dirty (a redrive after the
			// input is fixed brings it back through every route).
			d.tally.Repartitioned[out.Topic]++
			d.produce(d.s.eng.Dirty(in, t.misplaced(out, kp, d.part), d.tally))
			return nil
		}
	}
	recs, err := t.stageTwo(d.s.eng, out, d.tally)
	if err != nil {
		return err // the batch aborts: nothing of it commits
	}
	for _, r := range recs {
		d.produce(r)
	}
	return nil
}

func (ds *directSet[T]) finish(d *Direct, topic string, max *int64, err error) error {
	for _, t := range ds.tasks {
		if ferr := t.finish(d.s, topic, d.part, max, err == nil, d.produce, d.tally); err == nil {
			err = ferr
		}
		t.Locker().Unlock()
	}
	return err
}

// begin defers the operator's watermark and source writes to finish
// (window.Operator.BeginBatch): the task stays locked until then.
func (t *windowTask) begin() { t.beginBatch() }

func (t *windowTask) keyed(*kgo.Record) bool { return true }

func (t *windowTask) misplaced(out *kgo.Record, kp, part int32) *stageone.RecordError {
	return stageone.NewRecordError(wire.StageWindow, wire.ReasonNotPartitioned,
		"route %q has repartition: false, but group key %q belongs to partition %d, not %d: the input is not partitioned by the group key (Kafka's murmur2 key hash)",
		t.route.rt.Name, out.Key, kp, part)
}

func (t *windowTask) stageTwo(e *recordRunner, r *kgo.Record, tally *metrics.Tally) ([]*kgo.Record, error) {
	return e.processRepartitioned(r, t, tally)
}

// finish tells the task its input partition's progress (aligned: its
// only sources are this partition of each input) and publishes its
// gauges.
func (t *windowTask) finish(s *Stage, topic string, part int32, max *int64, ok bool, produce func(*kgo.Record), tally *metrics.Tally) error {
	now := s.eng.now()
	var err error
	if ok && max != nil && *max != math.MinInt64 && t.route.rt.Window.Spec.Watermark == plan.WatermarkAligned {
		src := SourceID(topic, part)
		t.heard(src)
		out, merr := t.op.Mark(src, *max)
		if merr != nil {
			err = fmt.Errorf("window state of route %q partition %d: %w", t.route.rt.Name, t.part, merr)
		}
		for _, r := range s.eng.windowResults(t.route.rt, out.Results, now, tally) {
			produce(r)
		}
	}
	if ferr := t.flush(!ok || err != nil); err == nil {
		err = ferr
	}
	t.lastRecord = now
	s.observeTask(t)
	return err
}

func (t *assemblyTask) begin() {}

func (t *assemblyTask) keyed(out *kgo.Record) bool { return len(out.Key) > 0 }

func (t *assemblyTask) misplaced(out *kgo.Record, kp, part int32) *stageone.RecordError {
	return stageone.NewRecordError(wire.StageAssemble, wire.ReasonNotPartitionedByID,
		"route %q has repartition: false, but part %q's id %q belongs to partition %d, not %d: the input is not partitioned by the assembly id (Kafka's murmur2 key hash)",
		t.route.rt.Name, wire.String(out.Headers, wire.HeaderPart), out.Key, kp, part)
}

func (t *assemblyTask) stageTwo(e *recordRunner, r *kgo.Record, tally *metrics.Tally) ([]*kgo.Record, error) {
	return e.processAssemblyRecord(r, t, e.now(), tally)
}

// finish publishes the task's gauges.
func (t *assemblyTask) finish(s *Stage, _ string, _ int32, _ *int64, _ bool, _ func(*kgo.Record), _ *metrics.Tally) error {
	s.observeAssemblyTask(t)
	return nil
}

// hashPartition is the partition of a keyed record under tp: the one
// state queries compute (KeyPartition), Kafka's murmur2 of the key. The
// router's default partitioner is a backup partitioner, whose Partition
// must not be called.
func hashPartition(tp kgo.TopicPartitioner, r *kgo.Record, n int) int32 {
	if bp, ok := tp.(kgo.TopicBackupPartitioner); ok {
		return int32(bp.PartitionByBackup(r, n, nil))
	}
	return int32(tp.Partition(r, n))
}
