package topotest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/runtime"
	"github.com/sidestream/sidestream/internal/wire"
)

// clock is a case's virtual processing-time clock: it starts at the
// case's start and moves only with advance_time (and wait). It counts
// its reads: the commit loop reads it once a poll, so a read after a
// move means the router's tick has seen the new time.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	reads int
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.now
}

// advance moves the clock and returns the reads so far.
func (c *clock) advance(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.reads
}

func (c *clock) readCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// step is one step of a case: records to write, a watermark to reach, a
// clock move.
type step struct {
	recs      []*kgo.Record
	watermark *int64
	advance   time.Duration
}

// harness runs one case: the router on the in-process Kafka, its steps
// one after another, each waited for.
type harness struct {
	tf      *File
	tc      Case
	top     *plan.Plan
	brokers []string
	reg     *testRegistry
	expect  map[string]*routeExpect
	steps   []step
	clock   *clock
	m       *metrics.Metrics
	// written counts the input records written, injected the marks the
	// case wrote (advance_watermark).
	written, injected int
	// unflushed: the clock moved after the last step the router
	// committed, so its tick's outputs may wait in the open transaction
	// (stop ends it).
	unflushed bool
	stopRun   context.CancelFunc
	done      chan error
	stopOnce  sync.Once
	runErr    error
}

// prepare reads a case's expectations and steps before anything runs.
func prepare(tf *File, tc Case, top *plan.Plan, brokers []string, reg *testRegistry) (*harness, error) {
	h := &harness{tf: tf, tc: tc, top: top, brokers: brokers, reg: reg,
		clock: &clock{now: startTime(tf, tc)}, m: metrics.New()}
	var err error
	if h.expect, err = parseExpect(tf, tc, top); err != nil {
		return nil, err
	}
	if err := h.buildSteps(); err != nil {
		return nil, err
	}
	if tc.Wait != "" {
		d, err := parseAdvance(tc.Wait)
		if err != nil {
			return nil, tf.errAt(fmt.Sprintf("tests[%d].wait", tc.index), "wait: %v", err)
		}
		h.steps = append(h.steps, step{advance: d})
	}
	return h, nil
}

// startTime is where a case's virtual clock starts: the case's clock,
// the file's, or the real time now (checked by ReadFile).
func startTime(tf *File, tc Case) time.Time {
	for _, n := range []*yaml.Node{&tc.Clock, &tf.Clock} {
		if n.Kind != 0 {
			ms, _ := parseTime("clock", n)
			return time.UnixMilli(ms)
		}
	}
	return time.Now().Truncate(time.Millisecond)
}

// errAt is a *FileError at path's position.
func (tf *File) errAt(path, format string, args ...any) error {
	l, c := tf.pos.at(path)
	return &FileError{File: tf.path, Problems: []Problem{{Line: l, Col: c, Message: fmt.Sprintf(format, args...)}}}
}

// buildSteps turns the case's input into steps, the records in a row
// into one step.
func (h *harness) buildSteps() error {
	parts := h.top.Settings.Topics.Partitions
	for i, in := range h.tc.Input {
		path := fmt.Sprintf("tests[%d].input[%d]", h.tc.index, i)
		switch {
		case in.AdvanceTime != "":
			d, _ := parseAdvance(in.AdvanceTime) // checked by ReadFile
			h.steps = append(h.steps, step{advance: d})
			continue
		case in.AdvanceWatermark.Kind != 0:
			if err := h.canMark(); err != nil {
				return h.tf.errAt(path, "input[%d]: advance_watermark: %v", i, err)
			}
			t, _ := parseTime("advance_watermark", &in.AdvanceWatermark)
			h.steps = append(h.steps, step{watermark: &t})
			continue
		}
		if in.Partition != nil && (*in.Partition < 0 || *in.Partition >= parts) {
			return h.tf.errAt(path, "input[%d]: partition %d: the case's input topics have %d partitions (0 to %d; partitions: N sets it)", i, *in.Partition, parts, parts-1)
		}
		r, err := inputRecord(h.tf, h.top, in, h.reg)
		if err != nil {
			return h.tf.errAt(path, "input[%d]: %v", i, err)
		}
		if r.Timestamp.IsZero() {
			r.Timestamp = h.clock.now
		}
		if n := len(h.steps); n > 0 && h.steps[n-1].recs != nil {
			h.steps[n-1].recs = append(h.steps[n-1].recs, r)
		} else {
			h.steps = append(h.steps, step{recs: []*kgo.Record{r}})
		}
	}
	return nil
}

// canMark: advance_watermark moves the aligned watermarks of window
// routes with a repartition topic, through the marks they read.
func (h *harness) canMark() error {
	n := 0
	for _, r := range h.top.Windows() {
		switch {
		case r.Window.Direct:
			return fmt.Errorf("window route %s has repartition: false: its watermark follows its input partition's records only; write records instead", r.Name)
		case r.Window.Spec.Watermark != config.WatermarkAligned:
			return fmt.Errorf("window route %s has watermark: %s: only aligned watermarks are moved by marks; write records instead", r.Name, r.Window.Spec.Watermark)
		}
		n++
	}
	if n == 0 {
		return errors.New("the topology has no window route")
	}
	return nil
}

// run starts the router, runs the steps, each until the router has
// committed what it did with it, and reads every route back.
func (h *harness) run(ctx context.Context, timeout time.Duration) (caseResult, error) {
	p, err := runtime.New(h.top, runtime.WithMetrics(h.m), runtime.WithInstanceID("test"), runtime.WithClock(h.clock.Now),
		runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		// A fetch parked on the in-process broker that misses the wake-up
		// of a record written meanwhile waits this long, not kgo's 5 s.
		runtime.WithKgoOpts(kgo.FetchMaxWait(50*time.Millisecond)))
	if err != nil {
		return caseResult{}, err
	}
	runCtx, stop := context.WithCancel(ctx)
	h.stopRun, h.done = stop, make(chan error, 1)
	go func() { h.done <- p.Run(runCtx) }()
	producer, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return caseResult{}, err
	}
	defer producer.Close()
	byKey, err := kgo.NewClient(kgo.SeedBrokers(h.brokers...))
	if err != nil {
		return caseResult{}, err
	}
	defer byKey.Close()
	for i, s := range h.steps {
		if err := h.runStep(ctx, s, producer, byKey); err != nil {
			return caseResult{}, h.timedOut(ctx, p, timeout, i, err)
		}
	}
	if h.unflushed {
		// The last tick's outputs may wait in the open transaction:
		// stopping ends it.
		if err := h.stop(); err != nil {
			return caseResult{}, fmt.Errorf("the router: %w", err)
		}
	}
	return compareRoutes(ctx, h.brokers, h.expect, h.reg)
}

func (h *harness) timedOut(ctx context.Context, p *runtime.Processor, timeout time.Duration, i int, err error) error {
	if ctx.Err() == nil {
		return err
	}
	ok, why := p.Ready()
	return fmt.Errorf("timed out after %s in step %d: %v of %d input records processed, %v of %v marks read (ready %v: %s)",
		timeout, i+1, inputConsumed(h.top, h.m), h.written, h.marksRead(), h.marksWritten()+float64(h.injected), ok, why)
}

// runStep writes a step's records or marks, or moves the clock, and
// waits until the router is done with it.
func (h *harness) runStep(ctx context.Context, s step, producer, byKey *kgo.Client) error {
	switch {
	case s.recs != nil:
		for _, r := range s.recs {
			cl := byKey
			if r.Partition >= 0 {
				cl = producer
			}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				return fmt.Errorf("write an input record: %w", err)
			}
			h.written++
		}
	case s.watermark != nil:
		marks := h.marks(*s.watermark)
		if err := producer.ProduceSync(ctx, marks...).FirstErr(); err != nil {
			return fmt.Errorf("advance_watermark: write the marks: %w", err)
		}
		h.injected += len(marks)
	default:
		reads := h.clock.advance(s.advance)
		h.unflushed = true
		// The commit loop reads the clock once a poll, before its tick.
		return h.waitFor(ctx, func() bool { return h.clock.readCount() > reads })
	}
	h.unflushed = false // this step's commit carries the ticks before it
	return h.waitFor(ctx, h.settledTwice())
}

// marks are the marks of every input partition at event time t, to
// every partition of every window repartition topic: what stage one
// writes at a commit when each source has reached t (sources.go).
func (h *harness) marks(t int64) []*kgo.Record {
	parts := h.top.Settings.Topics.Partitions
	var out []*kgo.Record
	for _, in := range h.top.InputTopics() {
		for p := range parts {
			hs := []kgo.RecordHeader{
				{Key: wire.HeaderMark, Value: []byte("1")},
				{Key: wire.HeaderTopic, Value: []byte(in)},
				{Key: wire.HeaderPartition, Value: []byte(strconv.Itoa(int(p)))},
				{Key: wire.HeaderSourceMax, Value: []byte(strconv.FormatInt(t, 10))},
			}
			for _, r := range h.top.Windows() {
				for q := range parts {
					out = append(out, &kgo.Record{Topic: r.Window.RepartitionTopic, Partition: q, Headers: hs, Value: []byte{}})
				}
			}
		}
	}
	return out
}

func (h *harness) marksRead() float64 { return testutil.ToFloat64(h.m.Marks.WithLabelValues("read")) }
func (h *harness) marksWritten() float64 {
	return testutil.ToFloat64(h.m.Marks.WithLabelValues("written"))
}

// settled: every input record written so far consumed and committed,
// every record repartitioned for a window or an assembly through stage
// two, and every mark (the router's and the case's) read.
func (h *harness) settled() bool {
	if inputConsumed(h.top, h.m) < float64(h.written) {
		return false
	}
	for _, r := range h.top.Routes {
		rep := ""
		switch {
		case r.Window != nil && !r.Window.Direct:
			rep = r.Window.RepartitionTopic
		case r.Assembly != nil && !r.Assembly.Direct:
			rep = r.Assembly.RepartitionTopic
		}
		if rep != "" && testutil.ToFloat64(h.m.Repartitioned.WithLabelValues(rep)) < testutil.ToFloat64(h.m.RouteIn.WithLabelValues(r.Name)) {
			return false
		}
	}
	return h.marksRead() >= h.marksWritten()+float64(h.injected)
}

// settledTwice is settled seen on two polls in a row with no commit
// between them: a commit adds its counters one by one (Observe), then
// counts itself, so one look could see half of one.
func (h *harness) settledTwice() func() bool {
	last := -1.0
	return func() bool {
		c := testutil.ToFloat64(h.m.Commits)
		if !h.settled() {
			last = -1
			return false
		}
		ok := last == c && testutil.ToFloat64(h.m.Commits) == c
		last = c
		return ok
	}
}

// waitFor polls cond until it holds, the router stops or ctx ends.
func (h *harness) waitFor(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case err := <-h.done:
			h.done <- err
			return fmt.Errorf("the router stopped: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// stop stops the router (which ends its open transaction) and returns
// what Run returned; a second call returns the same.
func (h *harness) stop() error {
	h.stopOnce.Do(func() {
		if h.stopRun == nil {
			return
		}
		h.stopRun()
		h.runErr = <-h.done
	})
	return h.runErr
}

// parseAdvance reads an advance_time or wait: a positive duration.
func parseAdvance(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (30s, 5m, 1h)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: time moves forward only", s)
	}
	return d, nil
}

// parseTime reads advance_watermark or clock: epoch ms, or RFC 3339
// text.
func parseTime(field string, n *yaml.Node) (int64, error) {
	if n.Kind == yaml.ScalarNode {
		if ms, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
			return ms, nil
		}
		if t, err := time.Parse(time.RFC3339Nano, n.Value); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("%s %q: give epoch ms or RFC 3339 text (2026-09-21T14:21:00Z)", field, n.Value)
}
