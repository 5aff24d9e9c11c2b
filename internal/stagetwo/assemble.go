package stagetwo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/tasks"
	"github.com/sidestream/sidestream/internal/wire"
)

// assemblyRoute is one compiled assembly route and its operator spec.
type assemblyRoute struct {
	rt    *plan.RouteNode
	spec  assembly.Spec
	event bool // the TTL runs on event time
	// name is the route's name as a header value, shared by every record
	// the route emits (header values are never written to).
	name []byte
}

// assemblyTask is the operator of one partition of an assembly's
// repartition topic. mu serialises the operator between the processing
// loop and state queries.
type assemblyTask struct {
	route *assemblyRoute
	part  int32
	mu    sync.Mutex
	st    changelog.Store
	op    *assembly.Operator
}

func (t *assemblyTask) Store() changelog.Store   { return t.st }
func (t *assemblyTask) Locker() *sync.Mutex      { return &t.mu }
func (t *assemblyTask) ChangelogTopic() string   { return t.route.rt.Assembly.ChangelogTopic }
func (t *assemblyTask) RepartitionTopic() string { return t.route.rt.Assembly.RepartitionTopic }
func (t *assemblyTask) Partition() int32         { return t.part }
func (t *assemblyTask) RouteName() string        { return t.route.rt.Name }

// assemblyStage owns the assembly tasks of this process.
type assemblyStage struct {
	routes map[string]*assemblyRoute // by repartition topic
	direct map[string]*assemblyRoute // the routes without one (repartition: false), by its name
	*tasks.Set[*assemblyTask]
}

func newAssemblyStage(t *plan.Plan) (*assemblyStage, error) {
	changelogs := map[string]bool{}
	for _, r := range t.Assemblies() {
		changelogs[r.Assembly.ChangelogTopic] = true
	}
	as := &assemblyStage{routes: map[string]*assemblyRoute{}, direct: map[string]*assemblyRoute{},
		Set: tasks.New[*assemblyTask](changelogs)}
	for _, r := range t.Assemblies() {
		c := r.Assembly.Spec
		s := assembly.Spec{Required: c.CompleteWhen, TTL: c.TTL.D(), Retention: c.Retention.D(), Described: r.Assembly.StateSpec}
		for _, p := range r.Assembly.Parts {
			s.Parts = append(s.Parts, p.Name)
		}
		if c.Duplicates == plan.FirstWins {
			s.Duplicates = assembly.FirstWins
		}
		s.Limits = stateLimits(c.Limits)
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("route %q: %w", r.Name, err)
		}
		as.routes[r.Assembly.RepartitionTopic] = &assemblyRoute{rt: r, spec: s, event: c.Time == plan.ClockEvent,
			name: []byte(r.Name)[:len(r.Name):len(r.Name)]}
		if r.Assembly.Direct {
			as.direct[r.Assembly.RepartitionTopic] = as.routes[r.Assembly.RepartitionTopic]
		}
	}
	return as, nil
}

// isRepartition reports whether topic is the repartition topic of an
// assembly route (a direct route has none: its name is never polled).
func (as *assemblyStage) isRepartition(topic string) bool {
	_, ok := as.routes[topic]
	return ok && as.direct[topic] == nil
}

// assemblyTask returns the task of a repartition partition, restoring its
// state from the changelog first when this process does not hold it yet
// (buildTask).
func (s *Stage) assemblyTask(ctx context.Context, topic string, part int32) (*assemblyTask, error) {
	ar := s.as.routes[topic]
	newOp := func(st changelog.Store) (*assemblyTask, error) {
		op, err := assembly.New(ar.spec, st)
		if err != nil {
			return nil, fmt.Errorf("rebuild assembly state: %w", err)
		}
		return &assemblyTask{route: ar, part: part, st: st, op: op}, nil
	}
	restored := func(t *assemblyTask, res Restored, d time.Duration) {
		s.log.Info("assembly state restored", "route", ar.rt.Name, "partition", part, "records", res.N,
			"open_assemblies", t.op.Open(), "duration", d)
	}
	return buildTask(ctx, s, s.as.Set, topic, ar.rt.Name, ar.rt.Assembly.ChangelogTopic, part, newOp, restored)
}

// AssemblyHeld returns what this process holds for one ID of an assembly
// route: its open assembly (parts, deadline, missing parts) or its
// completed marker. ok is false when no task of this process holds the ID
// (nothing arrived for it, or its partition is assigned elsewhere). It is
// safe to call while the processor runs; it serves GET /state/{route}.
func (s *Stage) AssemblyHeld(route, id string) (h assembly.Held, ok bool, err error) {
	found := false
	for _, ar := range s.as.routes {
		found = found || ar.rt.Name == route
	}
	if !found {
		return h, false, fmt.Errorf("route %q is not an assembly route", route)
	}
	for _, t := range s.as.All() {
		if t.route.rt.Name != route {
			continue
		}
		t.mu.Lock()
		h, ok, err = t.op.Held(id)
		t.mu.Unlock()
		if errors.Is(err, changelog.ErrClosed) {
			continue // dropped since all(): it holds nothing now
		}
		if err != nil || ok {
			return h, ok, err
		}
	}
	return assembly.Held{ID: id}, false, nil
}

// processAssembly is stage two for one part: into its task's operator,
// out come the assembled, incomplete and duplicate records.
func (e *recordRunner) processAssembly(r *kgo.Record, t *assemblyTask, now time.Time, tally *metrics.Tally) ([]*kgo.Record, error) {
	ar := t.route
	name := ar.rt.Name
	part := partName(r, ar.spec.Parts)
	if part == "" {
		return []*kgo.Record{e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageAssemble, wire.ReasonUnknownPart, "route %q: repartitioned part has no %s header", name, wire.HeaderPart), tally)}, nil
	}
	if len(r.Key) == 0 {
		return []*kgo.Record{e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageAssemble, wire.ReasonBadAssemblyID, "route %q: repartitioned part %q has no id (empty key)", name, part), tally)}, nil
	}
	if !gjson.ValidBytes(r.Value) {
		return []*kgo.Record{e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageAssemble, wire.ReasonBadPartValue, "route %q: part %q is not valid JSON", name, part), tally)}, nil
	}
	at := now.UnixMilli()
	if ar.event {
		h := wire.ReadRepartition(r.Headers)
		et, ok := h.EventTime, h.EventTimeOK
		if !ok {
			return []*kgo.Record{e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageAssemble, wire.ReasonBadTime, "route %q: repartitioned part has no %s header", name, wire.HeaderEventTime), tally)}, nil
		}
		at = et
	}
	out, err := t.op.Process(string(r.Key), part, at, r.Value)
	if err != nil {
		var re *assembly.RecordError
		if errors.As(err, &re) {
			return []*kgo.Record{e.Dirty(asWritten(r), stageone.NewRecordError(wire.StageAssemble, re.Reason, "route %q: %s", name, re.Detail), tally)}, nil
		}
		// The store failed and may hold part of this part's writes:
		// nothing of this transaction may commit. The batch aborts and
		// the task is rebuilt from its changelog.
		return nil, fmt.Errorf("assembly state of route %q partition %d: %w", name, t.part, err)
	}
	var recs []*kgo.Record
	tally.AddOverflow(name, metrics.PolicyEvict, out.Evicted)
	if ov := out.Overflow; ov != nil {
		// Refused: the part is not an assembly part of any outcome; the
		// overflow count is its conservation term. Its time may still
		// have expired assemblies.
		tally.AddOverflow(name, metrics.PolicyRoute, 1)
		recs = append(recs, e.fit(ar, stageone.OverflowRecord(ar.rt, asWritten(r), r.Key, ov.Limit, ov.Max, ov.Size), tally))
		for i := range out.Incomplete {
			recs = append(recs, e.assemblyRecord(ar, &out.Incomplete[i], r.Timestamp, tally))
		}
		return recs, nil
	}
	switch {
	case out.Duplicate:
		tally.AssemblyParts[[2]string{name, metrics.PartCompleted}]++
		hs := make([]kgo.RecordHeader, 0, len(r.Headers)+wire.ExpandedExtra+2)
		hs = wire.AppendExpanded(hs, r.Headers)
		hs = append(hs, kgo.RecordHeader{Key: wire.HeaderAssemblyRoute, Value: []byte(name)}, kgo.RecordHeader{Key: wire.HeaderDuplicateOf, Value: r.Key})
		recs = append(recs, e.fit(ar, &kgo.Record{Topic: ar.rt.Assembly.Spec.DuplicateTopic, Key: r.Key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp}, tally))
	case out.DuplicatePart:
		tally.AssemblyParts[[2]string{name, metrics.PartDuplicate}]++
	default:
		tally.AssemblyParts[[2]string{name, metrics.PartNew}]++
	}
	if out.Assembled != nil {
		recs = append(recs, e.assemblyRecord(ar, out.Assembled, r.Timestamp, tally))
	}
	for i := range out.Incomplete {
		recs = append(recs, e.assemblyRecord(ar, &out.Incomplete[i], r.Timestamp, tally))
	}
	return recs, nil
}

// assemblyRecord is one emitted assembly: to the route's topic when
// complete, to the incomplete route otherwise; keyed by the ID.
func (e *recordRunner) assemblyRecord(ar *assemblyRoute, a *assembly.Assembly, ts time.Time, tally *metrics.Tally) *kgo.Record {
	name := ar.rt.Name
	topic, result := ar.rt.Topic, metrics.ResultCompleted
	if !a.Complete {
		topic, result = ar.rt.Assembly.Spec.IncompleteTopic, metrics.ResultExpired
	}
	if a.Evicted {
		result = metrics.ResultEvicted
	}
	tally.Assemblies[[2]string{name, result}]++
	tally.AssemblyObs = append(tally.AssemblyObs, metrics.AssemblyObs{Route: name, Parts: len(a.Parts), Complete: a.Complete,
		Seconds: float64(a.Done-a.First) / 1000})
	key, parts, missing := assemblyHeaderValues(a)
	o := &assemblyOut{rec: kgo.Record{Topic: topic, Key: key, Value: a.Value, Timestamp: ts}}
	o.hs = [...]kgo.RecordHeader{
		{Key: wire.HeaderAssemblyRoute, Value: ar.name},
		{Key: wire.HeaderComplete, Value: boolValue(a.Complete)},
		{Key: wire.HeaderAssemblyParts, Value: parts},
		{Key: wire.HeaderMissing, Value: missing},
		{Key: wire.HeaderAssemblyEvicted, Value: boolValue(a.Evicted)},
	}
	o.rec.Headers = o.hs[:]
	return e.fit(ar, withStateVersion(ar.rt, &o.rec), tally)
}

// assemblyOut is an emitted assembly's record and its headers, allocated
// together.
type assemblyOut struct {
	rec kgo.Record
	hs  [5]kgo.RecordHeader
}

// assemblyHeaderValues are an emitted assembly's key (its ID) and the
// values of its parts and missing headers (names joined by commas), in
// one allocation; each is capped, so an append never writes into the
// next. None is nil: an empty header value is written as empty, not null.
func assemblyHeaderValues(a *assembly.Assembly) (key, parts, missing []byte) {
	n := len(a.ID)
	for _, p := range a.Parts {
		n += len(p.Name) + 1
	}
	for _, m := range a.Missing {
		n += len(m) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, a.ID...)
	key = b[:len(b):len(b)]
	for i, p := range a.Parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.Name...)
	}
	parts = b[len(key):len(b):len(b)]
	from := len(b)
	for i, m := range a.Missing {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return key, parts, b[from:len(b):len(b)]
}

var (
	headerTrue  = []byte("true")[:4:4]
	headerFalse = []byte("false")[:5:5]
)

// boolValue is a boolean header value, shared (never written to).
func boolValue(v bool) []byte {
	if v {
		return headerTrue
	}
	return headerFalse
}

// partName is the value of r's part header (wire.HeaderPart: the first
// one), as the spec's string when it names a part, so the common case
// allocates nothing; "" when there is none.
func partName(r *kgo.Record, parts []string) string {
	v, _ := wire.Value(r.Headers, wire.HeaderPart)
	for _, p := range parts {
		if p == string(v) {
			return p
		}
	}
	return string(v)
}

// fit returns rec, or, when it is over its topic's limit (many large
// parts), a dirty record in its place: its key, headers and value cut to
// fit, with the reason, so the record never poisons the transaction. It
// is counted as an assembly result, not as a dirty input record (no input
// record failed).
func (e *recordRunner) fit(ar *assemblyRoute, rec *kgo.Record, tally *metrics.Tally) *kgo.Record {
	limit := e.OutputLimit(rec.Topic)
	if stageone.RecordSize(rec) <= limit {
		return rec
	}
	d := e.Dirty(rec, stageone.NewRecordError(wire.StageAssemble, wire.ReasonTooLarge, "route %q: record for %s (id %q) is %d bytes, over the limit of topic %q: %d bytes",
		ar.rt.Name, rec.Topic, rec.Key, stageone.RecordSize(rec), rec.Topic, limit), metrics.NewTally())
	tally.Assemblies[[2]string{ar.rt.Name, metrics.ResultTooLarge}]++
	return d
}

// AssemblyTick advances the clock of every processing-time assembly task
// to now, so assemblies whose TTL passed go to the incomplete route even
// when no part arrives. It runs on the commit loop, between polls, in the
// transaction that is open.
func (s *Stage) AssemblyTick(now time.Time, produce func(*kgo.Record), tally *metrics.Tally) error {
	for _, t := range s.as.All() {
		if t.route.event {
			continue
		}
		t.mu.Lock()
		out, err := t.op.Advance(now.UnixMilli())
		// The operator reuses out's array on its next call: copied
		// before the lock goes.
		expired := slices.Clone(out.Incomplete)
		t.mu.Unlock()
		if err != nil {
			return fmt.Errorf("route %q partition %d: assembly ttl: %w", t.route.rt.Name, t.part, err)
		}
		for i := range expired {
			produce(s.eng.assemblyRecord(t.route, &expired[i], now, tally))
		}
		s.observeAssemblyTask(t)
	}
	return nil
}

// observeAssemblyTask publishes an assembly task's gauges and /tasks row.
func (s *Stage) observeAssemblyTask(t *assemblyTask) {
	l := []string{t.route.rt.Name, strconv.Itoa(int(t.part))}
	var clock *int64
	if c := t.op.Clock(); c > math.MinInt64 {
		clock = &c
	}
	s.rt.Assembly(t.route.rt.Assembly.RepartitionTopic, t.part, t.route.rt.Name, clock, t.op.Open(), t.st.Len(), t.st.SizeBytes())
	s.m.AssembliesOpen.WithLabelValues(l...).Set(float64(t.op.Open()))
	s.m.StoreEntries.WithLabelValues(l...).Set(float64(t.st.Len()))
	s.m.StoreBytes.WithLabelValues(l...).Set(float64(t.st.SizeBytes()))
}
