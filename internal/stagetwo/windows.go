package stagetwo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/window"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/tasks"
	"github.com/sidestream/sidestream/internal/wire"
)

// windowRoute is one compiled window route and its operator spec.
type windowRoute struct {
	rt   *plan.RouteNode
	spec window.Spec
}

// windowTask is the operator of one partition of a repartition topic and
// the store holding all of its state.
type windowTask struct {
	mu    sync.Mutex
	route *windowRoute
	part  int32
	st    changelog.Store
	op    *window.Operator
	// The processing-time clock (Config.Clock); nil: time.Now.
	clock func() time.Time
	// Wall-clock times for idle advance: the last record, the last advance.
	lastRecord, lastAdvance time.Time
	// Aligned watermarks: when the task was built and when it last heard
	// from each source, for idle_timeout.
	built     time.Time
	lastHeard map[string]time.Time
	// In a batch (beginBatch), the sources heard, stamped once at its end
	// (flush): nothing reads lastHeard while the batch holds the lock, and
	// a clock read per record costs more than the rest of heard.
	batching bool
	heardIn  map[string]struct{}
	// What processWindow reuses from record to record: the aggregates'
	// scratch, and the source topics, source ids and group keys read,
	// each made once (bounded: a foreign writer may name many topics, a
	// route may have many keys).
	scratch *stageone.WindowScratch
	topics  map[string]string
	srcIDs  map[srcKey]string
	keys    map[string]string
}

type srcKey struct {
	topic string
	part  int32
}

// maxNames and maxNameLen bound what windowTask keeps of the names it
// read: at most 1,024 of each kind, none longer than 256 bytes.
const (
	maxNames   = 1024
	maxNameLen = 256
)

// now reads the task's processing-time clock.
func (t *windowTask) now() time.Time {
	if t.clock == nil {
		return time.Now()
	}
	return t.clock()
}

// topic is the source topic of a header value, made once.
func (t *windowTask) topic(b []byte) string { return intern(&t.topics, b) }

// groupKey is a record's group key (its Kafka key), made once.
func (t *windowTask) groupKey(b []byte) string { return intern(&t.keys, b) }

// intern is b as a string, kept in *m while it holds fewer than
// maxNames (and b is not longer than maxNameLen).
func intern(m *map[string]string, b []byte) string {
	if s, ok := (*m)[string(b)]; ok {
		return s
	}
	s := string(b)
	if *m == nil {
		*m = map[string]string{}
	}
	if len(*m) < maxNames && len(s) <= maxNameLen {
		(*m)[s] = s
	}
	return s
}

// sourceID is SourceID, made once per source.
func (t *windowTask) sourceID(topic string, part int32) string {
	k := srcKey{topic, part}
	if s, ok := t.srcIDs[k]; ok {
		return s
	}
	s := SourceID(topic, part)
	if t.srcIDs == nil {
		t.srcIDs = map[srcKey]string{}
	}
	if len(t.srcIDs) < maxNames {
		t.srcIDs[k] = s
	}
	return s
}

// beginBatch starts a batch of the task's records, with the task
// locked until flush: the operator defers its watermark and source
// writes (window.Operator.BeginBatch), heard its clock reads.
func (t *windowTask) beginBatch() {
	t.op.BeginBatch()
	t.batching = true
}

// flush ends the batch (beginBatch): the sources heard in it are stamped
// with the time it ended. After failed, a store error (the batch aborts,
// the task is rebuilt from its changelog), it drops what the operator
// deferred: the failed store is not touched again. Otherwise it writes
// it; an error is the store's, and the batch aborts.
func (t *windowTask) flush(failed bool) error {
	if len(t.heardIn) > 0 {
		now := t.now()
		for src := range t.heardIn {
			t.lastHeard[src] = now
		}
		clear(t.heardIn)
	}
	t.batching = false
	if failed {
		t.op.DropBatch()
		return nil
	}
	if err := t.op.Flush(); err != nil {
		return fmt.Errorf("window state of route %q partition %d: %w", t.route.rt.Name, t.part, err)
	}
	return nil
}

func (t *windowTask) Store() changelog.Store   { return t.st }
func (t *windowTask) Locker() *sync.Mutex      { return &t.mu }
func (t *windowTask) ChangelogTopic() string   { return t.route.rt.Window.ChangelogTopic }
func (t *windowTask) RepartitionTopic() string { return t.route.rt.Window.RepartitionTopic }
func (t *windowTask) Partition() int32         { return t.part }
func (t *windowTask) RouteName() string        { return t.route.rt.Name }

// windowStage owns the window tasks of this process.
type windowStage struct {
	routes map[string]*windowRoute // by repartition topic
	direct map[string]*windowRoute // the routes without one (repartition: false), by its name
	*tasks.Set[*windowTask]
	// partitions of every repartition (and changelog) topic, once the
	// internal topics are ensured; 0 before.
	partitions atomic.Int32
	// builder opens the store of one changelog partition.
	builder changelog.Builder
	// sources are the input partitions every task's watermark waits for
	// (aligned watermarks), set once the inputs are described.
	srcMu   sync.Mutex
	sources []string
}

func (ws *windowStage) setSources(s []string) {
	ws.srcMu.Lock()
	ws.sources = s
	ws.srcMu.Unlock()
}

func (ws *windowStage) sourceIDs() []string {
	ws.srcMu.Lock()
	defer ws.srcMu.Unlock()
	return ws.sources
}

func newWindowStage(t *plan.Plan, b changelog.Builder) (*windowStage, error) {
	changelogs := map[string]bool{}
	for _, r := range t.Windows() {
		changelogs[r.Window.ChangelogTopic] = true
	}
	ws := &windowStage{routes: map[string]*windowRoute{}, direct: map[string]*windowRoute{},
		Set: tasks.New[*windowTask](changelogs), builder: b}
	for _, r := range t.Windows() {
		spec, err := windowSpec(r.Window)
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", r.Name, err)
		}
		ws.routes[r.Window.RepartitionTopic] = &windowRoute{rt: r, spec: spec}
		if r.Window.Direct {
			ws.direct[r.Window.RepartitionTopic] = ws.routes[r.Window.RepartitionTopic]
		}
	}
	return ws, nil
}

func windowSpec(w *plan.WindowNode) (window.Spec, error) {
	c := w.Spec
	s := window.Spec{
		Size: c.Size.D(), Advance: c.Advance.D(), Gap: c.Gap.D(),
		MaxOutOfOrderness: c.MaxOutOfOrderness.D(), Grace: c.Grace.D(),
		Limits: stateLimits(c.Limits), Described: w.StateSpec,
	}
	switch c.Type {
	case plan.WindowTumbling:
		s.Kind = window.Tumbling
	case plan.WindowHopping:
		s.Kind = window.Hopping
	case plan.WindowSession:
		s.Kind = window.Session
	}
	if c.Emit == plan.EmitFinal {
		s.Emit = window.EmitFinal
	}
	for _, a := range w.Aggregates {
		k, err := window.ParseAggKind(a.Fn)
		if err != nil {
			return s, err
		}
		s.Aggregations = append(s.Aggregations, window.Aggregation{Name: a.Name, Kind: k})
	}
	return s, s.Validate()
}

func (ws *windowStage) isRepartition(topic string) bool { _, ok := ws.routes[topic]; return ok }

// windowTask returns the task of a repartition partition, restoring its
// state from the changelog first when this process does not hold it yet
// (buildTask).
func (s *Stage) windowTask(ctx context.Context, topic string, part int32) (*windowTask, error) {
	wr := s.ws.routes[topic]
	newOp := func(st changelog.Store) (*windowTask, error) {
		op, err := window.New(wr.spec, st)
		if err != nil {
			return nil, fmt.Errorf("rebuild window state: %w", err)
		}
		if wr.rt.Window.Direct {
			// The task is the input partition's own: its only sources are
			// that partition of each input.
			var srcs []string
			for _, in := range s.top.InputTopics() {
				srcs = append(srcs, SourceID(in, part))
			}
			op.SetSources(srcs)
		} else {
			op.SetSources(s.ws.sourceIDs())
		}
		return &windowTask{route: wr, part: part, st: st, op: op, clock: s.eng.now, built: s.eng.now(), lastHeard: map[string]time.Time{}}, nil
	}
	restored := func(t *windowTask, res Restored, d time.Duration) {
		s.log.Info("window state restored", "route", wr.rt.Name, "partition", part, "from_offset", res.From, "records", res.N,
			"open_windows", t.op.OpenWindows(), "store_entries", t.st.Len(), "duration", d)
	}
	return buildTask(ctx, s, s.ws.Set, topic, wr.rt.Name, wr.rt.Window.ChangelogTopic, part, newOp, restored)
}

// processWindow is stage two: one repartitioned record into its task's
// operator. It returns the window results (and the late record, if late).
func (e *recordRunner) processWindow(r *kgo.Record, t *windowTask, tally *metrics.Tally) ([]*kgo.Record, error) {
	rt := t.route.rt
	h := wire.ReadRepartition(r.Headers)
	if !h.EventTimeOK {
		if h.Err != nil {
			return []*kgo.Record{e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageWindow, wire.ReasonBadTime, "repartitioned record: %v", h.Err), tally)}, nil
		}
		return []*kgo.Record{e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageWindow, wire.ReasonBadTime, "repartitioned record has no %s header", wire.HeaderEventTime), tally)}, nil
	}
	et := h.EventTime
	m := stageone.Meta{Key: h.SourceKey, Topic: t.topic(h.Topic), Timestamp: r.Timestamp.UnixMilli(), Offset: h.Offset}
	if h.PartitionOK {
		m.Partition = int32(h.Partition)
	}
	if t.scratch == nil {
		t.scratch = e.NewWindowScratch()
	}
	vals, rerr := e.WindowValues(rt, r, &h, &m, t.scratch)
	if rerr != nil {
		return []*kgo.Record{e.Dirty(asWritten(r), rerr, tally)}, nil
	}
	var out window.Output
	var err error
	if h.HasSourceMax {
		// Aligned: judged by the source's own progress (sources.go).
		before := h.Before
		if !h.BeforeOK {
			return []*kgo.Record{e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageWindow, wire.ReasonBadMark, "%s header %q is not a number", wire.HeaderSourceMax, h.SourceMax), tally)}, nil
		}
		src := t.sourceID(m.Topic, m.Partition)
		t.heard(src)
		out, err = t.op.ProcessAligned(src, t.groupKey(r.Key), et, vals, before)
	} else {
		// Written without source progress: the task's own watermark.
		out, err = t.op.Process(t.groupKey(r.Key), et, vals)
	}
	if err != nil {
		var we *window.RecordError
		if errors.As(err, &we) {
			return []*kgo.Record{e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageWindow, we.Reason, "route %q: %v", rt.Name, we), tally)}, nil
		}
		// The store failed and may hold part of this record's writes:
		// nothing of this transaction may commit. The batch aborts and
		// the task is rebuilt from its changelog.
		return nil, fmt.Errorf("window state of route %q partition %d: %w", rt.Name, t.part, err)
	}
	recs := e.windowResults(rt, out.Results, r.Timestamp, tally)
	tally.AddOverflow(rt.Name, metrics.PolicyEvict, out.Evicted)
	if ov := out.Overflow; ov != nil {
		or := stageone.OverflowRecord(rt, asWritten(r), m.Key, ov.Limit, ov.Max, ov.Size)
		if d := e.tooLarge(rt, "overflow", or, r, tally); d != nil {
			return append(recs, d), nil
		}
		tally.AddOverflow(rt.Name, metrics.PolicyRoute, 1)
		return append(recs, or), nil
	}
	if out.Late != nil {
		lr := e.lateRecord(rt, r, m.Key, out.Late)
		if d := e.tooLarge(rt, "late", lr, r, tally); d != nil {
			return append(recs, d), nil
		}
		tally.Late[rt.Name]++
		recs = append(recs, lr)
	} else {
		tally.Aggregated[rt.Name]++
	}
	return recs, nil
}

// tooLarge is the dirty record (too_large, counted dirty) for a late or
// overflow record over its topic's limit (OutputLimit), nil when it fits. Stage one
// measured the repartitioned record with its envelope; with the headers
// written out again and the route's own added, a record near the bound
// can pass stage one and not fit here, and a record the broker refuses
// would abort every transaction that holds it.
func (e *recordRunner) tooLarge(rt *plan.RouteNode, what string, out, r *kgo.Record, tally *metrics.Tally) *kgo.Record {
	if n, limit := stageone.RecordSize(out), e.OutputLimit(out.Topic); n > limit {
		return e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageWindow, wire.ReasonTooLarge,
			"route %q: the %s record is %d bytes with its headers, over the limit of topic %q: %d bytes", rt.Name, what, n, out.Topic, limit), tally)
	}
	return nil
}

func (e *recordRunner) windowResults(rt *plan.RouteNode, rs []window.Result, ts time.Time, tally *metrics.Tally) []*kgo.Record {
	recs := make([]*kgo.Record, 0, len(rs))
	for _, res := range rs {
		kind := "update"
		switch {
		case res.Retract:
			kind = "retract"
		case res.Evicted:
			kind = "evicted"
		case res.Final:
			kind = "final"
		case res.Revision == 1:
			kind = "first"
		}
		value, reason, err := e.resultValue(rt, res.Value)
		if err != nil {
			// The operator's own output does not fit the schema the
			// topology derived (a first/last value of another type):
			// the result goes to dirty with the reason, never away. It
			// is counted as a window result of kind "dirty", not as a
			// dirty input: the input it came from was aggregated.
			src := &kgo.Record{Topic: rt.Topic, Key: []byte(res.Key), Value: res.Value, Timestamp: ts}
			recs = append(recs, e.Dirty(src, stageone.NewRecordError(wire.StageWindow, reason, "route %q: %s: %v", rt.Name, rt.Format, err), metrics.NewTally()))
			tally.WindowResults[[2]string{rt.Name, "dirty"}]++
			continue
		}
		tally.WindowResults[[2]string{rt.Name, kind}]++
		recs = append(recs, withStateVersion(rt, resultRecord(rt.Topic, res, value, ts)))
	}
	return recs
}

// resultRec is a window result's record, its headers and the digits of
// its revision in one allocation.
type resultRec struct {
	rec kgo.Record
	hs  [3]kgo.RecordHeader
	rev [20]byte
}

// The values of the boolean headers, shared: nothing writes to a
// record's header values once built.
var (
	trueValue  = []byte("true")
	falseValue = []byte("false")
)

func resultRecord(topic string, res window.Result, value []byte, ts time.Time) *kgo.Record {
	rr := &resultRec{}
	final := falseValue
	if res.Final {
		final = trueValue
	}
	rr.hs[0] = kgo.RecordHeader{Key: wire.HeaderRevision, Value: strconv.AppendInt(rr.rev[:0:len(rr.rev)], res.Revision, 10)}
	rr.hs[1] = kgo.RecordHeader{Key: wire.HeaderFinal, Value: final}
	n := 2
	if res.Evicted {
		rr.hs[2] = kgo.RecordHeader{Key: wire.HeaderEvicted, Value: trueValue}
		n = 3
	}
	rr.rec = kgo.Record{Topic: topic, Key: []byte(res.Key), Value: value, Timestamp: ts, Headers: rr.hs[:n:n]}
	return &rr.rec
}

// resultValue is a window result's value in its route's format: the
// operator's JSON, the connect-json envelope, or Avro behind the
// registered schema's header; on error, the dirty reason. A retraction
// (nil) stays a tombstone: the sink deletes the row.
func (e *recordRunner) resultValue(rt *plan.RouteNode, value []byte) ([]byte, string, error) {
	var v []byte
	var err error
	switch {
	case value == nil:
		return nil, "", nil
	case rt.Connect != nil:
		v, err = stageone.ConnectWindowValue(rt.Connect, value)
		return v, wire.ReasonConnectType, err
	case rt.Avro != nil:
		v, err = e.AvroWindowValue(rt, value)
		return v, wire.ReasonAvroEncode, err
	}
	return value, "", nil
}

// lateRecord is the input record, unchanged (its headers as written
// before the repartition envelope), on the late route, with the
// watermark it met, the windows it missed and how late it was.
func (e *recordRunner) lateRecord(rt *plan.RouteNode, r *kgo.Record, key []byte, l *window.Late) *kgo.Record {
	wins := make([]string, len(l.Windows))
	for i, w := range l.Windows {
		wins[i] = w.String()
	}
	// As written before the repartition envelope (wire.AppendExpanded).
	hs := make([]kgo.RecordHeader, 0, len(r.Headers)+wire.ExpandedExtra+4)
	hs = wire.AppendExpanded(hs, r.Headers)
	hs = append(hs,
		kgo.RecordHeader{Key: wire.HeaderLateRoute, Value: []byte(rt.Name)},
		kgo.RecordHeader{Key: wire.HeaderLateWM, Value: []byte(strconv.FormatInt(l.Watermark, 10))},
		kgo.RecordHeader{Key: wire.HeaderLateWins, Value: []byte(strings.Join(wins, ","))},
		kgo.RecordHeader{Key: wire.HeaderLateBy, Value: []byte(strconv.FormatInt(l.LateBy, 10))},
	)
	return &kgo.Record{Topic: rt.Window.Spec.LateTopic, Key: key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp}
}

// IdleAdvance moves forward, with the wall clock, the watermark of every
// window task whose route sets idle_timeout and that has seen no record
// for that long, so windows still close on a quiet stream. This is the one
// place where wall-clock time enters results: it trades determinism for
// liveness and is off unless configured.
func (s *Stage) IdleAdvance(now time.Time, produce func(*kgo.Record), tally *metrics.Tally) error {
	for _, t := range s.ws.All() {
		if err := s.idleAdvanceTask(t, now, produce, tally); err != nil {
			return err
		}
	}
	return nil
}

// heard notes that a source spoke (a record or a mark): an idle source
// counts again from now on.
func (t *windowTask) heard(src string) {
	if !t.batching {
		t.lastHeard[src] = t.now()
	} else if _, ok := t.heardIn[src]; !ok {
		if t.heardIn == nil {
			t.heardIn = map[string]struct{}{}
		}
		t.heardIn[src] = struct{}{}
	}
	if t.op.Idle(src) {
		_, _ = t.op.SetIdle(src, false) // taking a source back in only notes it
	}
}

// idleSources leaves out of an aligned task's minimum every source not
// heard from for idle_timeout, so a quiet or empty input partition does
// not hold the windows for ever.
func (s *Stage) idleSources(t *windowTask, now time.Time, idle time.Duration, produce func(*kgo.Record), tally *metrics.Tally) error {
	srcs := map[string]bool{}
	for _, src := range t.op.Expected() {
		srcs[src] = true
	}
	for src := range t.op.Sources() {
		srcs[src] = true
	}
	for src := range srcs {
		last, ok := t.lastHeard[src]
		if !ok {
			last = t.built
		}
		if t.op.Idle(src) || now.Sub(last) < idle {
			continue
		}
		out, err := t.op.SetIdle(src, true)
		if err != nil {
			return fmt.Errorf("route %q partition %d: source %s idle: %w", t.route.rt.Name, t.part, src, err)
		}
		s.log.Info("input partition idle: left out of the window watermark until it speaks again",
			"route", t.route.rt.Name, "partition", t.part, "source", src, "idle_timeout", idle)
		for _, r := range s.eng.windowResults(t.route.rt, out.Results, now, tally) {
			produce(r)
		}
	}
	return nil
}

func (s *Stage) idleAdvanceTask(t *windowTask, now time.Time, produce func(*kgo.Record), tally *metrics.Tally) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	idle := t.route.rt.Window.Spec.IdleTimeout.D()
	if idle > 0 && t.route.rt.Window.Spec.Watermark == plan.WatermarkAligned {
		if err := s.idleSources(t, now, idle, produce, tally); err != nil {
			return err
		}
	}
	wm := t.op.Watermark()
	if idle <= 0 || wm == math.MinInt64 || t.lastRecord.IsZero() || now.Sub(t.lastRecord) < idle {
		return nil
	}
	from := t.lastRecord.Add(idle)
	if t.lastAdvance.After(from) {
		from = t.lastAdvance
	}
	delta := now.Sub(from).Milliseconds()
	if delta <= 0 {
		return nil
	}
	out, err := t.op.AdvanceWatermark(wm + delta)
	if err != nil {
		return fmt.Errorf("route %q partition %d: idle advance: %w", t.route.rt.Name, t.part, err)
	}
	t.lastAdvance = from.Add(time.Duration(delta) * time.Millisecond)
	for _, r := range s.eng.windowResults(t.route.rt, out.Results, now, tally) {
		produce(r)
	}
	s.observeTask(t)
	return nil
}
