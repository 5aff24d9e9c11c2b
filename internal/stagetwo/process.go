package stagetwo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sidestream/sidestream/internal/plan"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/window"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/wire"
)

// ProcessRepartition is stage two for the polled records of one
// partition of a repartition topic (IsRepartition), in offset order,
// each output handed to produce. An error is a task's build or store
// failing: the batch aborts (never a dirty record).
func (s *Stage) ProcessRepartition(ctx context.Context, topic string, part int32, recs []*kgo.Record, tally *metrics.Tally, produce func(*kgo.Record)) error {
	if s.ws.isRepartition(topic) {
		t, err := s.windowTask(ctx, topic, part)
		if err != nil {
			return err
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		// The watermark and source progress reach the store once, at the
		// end of the batch (window.Operator.BeginBatch), before anything
		// else can read it: the task stays locked until then.
		t.beginBatch()
		err = s.eng.processWindowBatch(t, recs, tally, produce)
		if ferr := t.flush(err != nil); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
		t.lastRecord = s.eng.now()
		s.observeTask(t)
		return nil
	}
	t, err := s.assemblyTask(ctx, topic, part)
	if err != nil {
		return err
	}
	t.mu.Lock()
	for _, r := range recs {
		outs, err := s.eng.processAssemblyRecord(r, t, s.eng.now(), tally)
		if err != nil {
			t.mu.Unlock()
			return err
		}
		for _, out := range outs {
			produce(out)
		}
	}
	t.mu.Unlock()
	s.observeAssemblyTask(t)
	return nil
}

// processWindowBatch is stage two for the records of one window task's
// batch, each output handed to produce.
func (e *recordRunner) processWindowBatch(t *windowTask, recs []*kgo.Record, tally *metrics.Tally, produce func(*kgo.Record)) error {
	for _, r := range recs {
		outs, err := e.processRepartitioned(r, t, tally)
		if err != nil {
			return err
		}
		for _, out := range outs {
			produce(out)
		}
	}
	return nil
}

// processRepartitioned is stage two for one record of a repartition
// topic. A bad record is a dirty record; an error is the task's store
// failing, which may hold part of the record's writes: the batch aborts
// and the task is rebuilt from its changelog (never a dirty record).
func (e *recordRunner) processRepartitioned(r *kgo.Record, t *windowTask, tally *metrics.Tally) ([]*kgo.Record, error) {
	if IsMark(r) {
		return e.processMark(r, t, tally)
	}
	tally.Repartitioned[r.Topic]++
	return e.processWindow(r, t, tally)
}

// processAssemblyRecord is stage two of an assembly route for one record
// of its repartition topic, with processRepartitioned's contract.
func (e *recordRunner) processAssemblyRecord(r *kgo.Record, t *assemblyTask, now time.Time, tally *metrics.Tally) ([]*kgo.Record, error) {
	tally.Repartitioned[r.Topic]++
	return e.processAssembly(r, t, now, tally)
}

// IsMark reports whether r is a mark (its first header says so).
func IsMark(r *kgo.Record) bool {
	return len(r.Headers) > 0 && r.Headers[0].Key == wire.HeaderMark
}

// SourceID names a source in a window task's store.
func SourceID(topic string, part int32) string { return topic + "/" + strconv.Itoa(int(part)) }

// processMark is stage two for one mark: the source's progress moves the
// task's watermark. A malformed mark goes to dirty (it is counted as
// consumed then, like any record that goes there).
func (e *recordRunner) processMark(r *kgo.Record, t *windowTask, tally *metrics.Tally) ([]*kgo.Record, error) {
	topic := wire.String(r.Headers, wire.HeaderTopic)
	part, okp := wire.Int(r.Headers, wire.HeaderPartition)
	m, okm := wire.Int(r.Headers, wire.HeaderSourceMax)
	if topic == "" || !okp || !okm || part < 0 || part > math.MaxInt32 {
		tally.Repartitioned[r.Topic]++
		return []*kgo.Record{e.Dirty(r, stageone.NewRecordError(wire.StageWindow, wire.ReasonBadMark, "mark without a source topic, partition or maximum event time"), tally)}, nil
	}
	src := SourceID(topic, int32(part))
	t.heard(src)
	out, err := t.op.Mark(src, m)
	if err != nil {
		tally.Repartitioned[r.Topic]++
		var we *window.RecordError
		if errors.As(err, &we) {
			return []*kgo.Record{e.Dirty(r, stageone.NewRecordError(wire.StageWindow, wire.ReasonBadMark, "route %q: %v", t.route.rt.Name, we), tally)}, nil
		}
		return nil, fmt.Errorf("window state of route %q partition %d: %w", t.route.rt.Name, t.part, err)
	}
	tally.MarksRead++
	return e.windowResults(t.route.rt, out.Results, r.Timestamp, tally), nil
}

// observeTask publishes a window task's gauges.
func (s *Stage) observeTask(t *windowTask) {
	l := []string{t.route.rt.Name, strconv.Itoa(int(t.part))}
	var wmp *int64
	if wm := t.op.Watermark(); wm > math.MinInt64 {
		wmp = &wm
		s.m.Watermark.WithLabelValues(l...).Set(float64(wm))
		s.m.WatermarkTimestamp.WithLabelValues(l...).Set(float64(wm) / 1000)
		s.m.WatermarkLag.WithLabelValues(l...).Set(time.Since(time.UnixMilli(wm)).Seconds())
	}
	s.rt.Window(t.route.rt.Window.RepartitionTopic, t.part, t.route.rt.Name, wmp, t.op.OpenWindows(), t.st.Len(), t.st.SizeBytes())
	if t.route.rt.Window.Spec.Watermark == plan.WatermarkAligned {
		src, at := t.op.HeldBy()
		var atp *int64
		if at != math.MinInt64 {
			atp = &at
		}
		s.rt.HeldBy(t.route.rt.Window.RepartitionTopic, t.part, src, atp)
	}
	if ck, ok := t.st.(changelog.Checkpointer); ok {
		if off, ok := ck.Checkpoint(); ok {
			s.rt.LocalCheckpoint(t.route.rt.Window.RepartitionTopic, t.part, &off)
		}
	}
	s.m.OpenWindows.WithLabelValues(l...).Set(float64(t.op.OpenWindows()))
	s.m.StoreEntries.WithLabelValues(l...).Set(float64(t.st.Len()))
	s.m.StoreBytes.WithLabelValues(l...).Set(float64(t.st.SizeBytes()))
}

// asWritten is r as stage one wrote it before the repartition envelope
// (wire.ExpandRepartition): what stage two writes out of a record (late,
// overflow, duplicate and dirty records) stays what it was. r itself
// when it has no envelope.
func asWritten(r *kgo.Record) *kgo.Record {
	hs := wire.ExpandRepartition(r.Headers)
	if len(hs) == len(r.Headers) {
		return r
	}
	c := *r
	c.Headers = hs
	return &c
}
