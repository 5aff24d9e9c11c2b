package stageone

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/objective"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// Engine is stage one: it turns one input record into the records to
// write. It is pure: no I/O, safe for concurrent use, the same input
// always gives the same output (the determinism the exactly-once replay
// relies on).
type Engine struct {
	dirtyTopic string
	dec        *decoder
	rt         *router
	appID      string
	// maxRec is the dirty topic's cap (dirty.max_record_bytes), trunc
	// what a dirty record too large even for it keeps of its value.
	maxRec int
	trunc  int
	// outMax caps every other output without a limit of its own in
	// outLimits (set by SetOutputLimits from the topics' max.message.bytes
	// before the first record): limits.max_record_bytes, else
	// dirty.max_record_bytes.
	outMax    int
	outLimits atomic.Pointer[map[string]int]
	// assemblies are the assembly routes, whose parts stage one writes.
	assemblies []*plan.RouteNode
	partRoute  map[string]string // repartition topic -> assembly route
	// lagRoutes are the routes with an event-time lag objective, whose
	// records' event times are tallied (nil when none has one).
	lagRoutes map[string]bool
	// tombstones are the routes an input tombstone is forwarded to.
	tombstones []*plan.RouteNode
	// regs are the registry-backed inputs' decoders, by topic.
	regs map[string]RegistryDecoder
	// topics answers whether a computed topic exists (WithTopics).
	topics TopicResolver
	// winFields are what each window route's aggregates read, and how
	// stage two evaluates them (windowPlan).
	winFields map[*plan.RouteNode]*windowPlan
	// evals lends each record the VM and variables map it evaluates
	// with; headers: some expression reads _headers.
	evals   evalPool
	headers bool
	// expand: stage one writes the seven text headers of the versions
	// before the envelope (topics.repartition_format: headers).
	expand bool
	// version is the wire.HeaderTopologyVersion header of every record
	// stage one writes out (stamp), its value shared by all of them.
	version kgo.RecordHeader
	// tables: the topology has lookup tables, so stage one owns
	// wire.HeaderLookupTooOld on what it writes (an input's is dropped).
	tables bool
}

// New returns the stage one of t. A topology with registry-backed inputs
// needs WithDecoders, one with avro routes WithSchemaIDs.
func New(t *plan.Plan, opts ...Option) *Engine {
	var tomb []*plan.RouteNode
	for _, r := range t.Routes {
		if r.ForwardTombstones {
			tomb = append(tomb, r)
		}
	}
	e := &Engine{
		tombstones: tomb,
		dirtyTopic: t.Dirty.Topic,
		dec:        newDecoder(t),
		rt:         newRouter(t),
		appID:      t.Settings.ApplicationID,
		maxRec:     t.Dirty.MaxRecordBytes,
		trunc:      t.Dirty.TruncateTo,
		outMax:     cmp.Or(t.Settings.Limits.MaxRecordBytes, t.Dirty.MaxRecordBytes),

		assemblies: t.Assemblies(),
		partRoute:  partRoutes(t),
		lagRoutes:  lagRoutes(t),
		winFields:  windowFields(t),
		headers:    slices.Contains(t.Meta, plan.MetaHeaders),
		evals:      evalPool{fields: len(t.Fields)},
		expand:     t.Settings.Topics.RepartitionFormat == plan.RepartitionHeaders,
		version:    kgo.RecordHeader{Key: wire.HeaderTopologyVersion, Value: []byte(t.Version)},
		tables:     len(t.Tables) > 0,
	}
	for _, o := range opts {
		o(e)
	}
	return e
}

func partRoutes(t *plan.Plan) map[string]string {
	m := map[string]string{}
	for _, r := range t.Assemblies() {
		m[r.Assembly.RepartitionTopic] = r.Name
	}
	return m
}

// lagRoutes are the routes of t with an event-time lag objective, nil
// when none has one (nothing is tallied then).
func lagRoutes(t *plan.Plan) map[string]bool {
	var m map[string]bool
	for _, o := range t.Objectives {
		if o.Kind == objective.EventTimeLag {
			if m == nil {
				m = map[string]bool{}
			}
			m[o.Route] = true
		}
	}
	return m
}

// MaxRecordBytes is dirty.max_record_bytes: no dirty record written may
// be larger (RecordSize); a larger one is cut (Dirty).
func (e *Engine) MaxRecordBytes() int { return e.maxRec }

// OutputLimit is the largest record (RecordSize) written to topic, an
// output other than dirty: its limit from SetOutputLimits, else
// limits.max_record_bytes, else dirty.max_record_bytes. A larger output
// sends its input record to dirty whole (when the dirty topic holds it),
// with the limit in the reason's message, so it can be redriven.
func (e *Engine) OutputLimit(topic string) int {
	if m := e.outLimits.Load(); m != nil {
		if n, ok := (*m)[topic]; ok {
			return n
		}
	}
	return e.outMax
}

// SetOutputLimits sets the limit of each output topic (the runtime reads
// them from the broker at start: the topic's max.message.bytes, or less);
// topics not in byTopic keep the default (OutputLimit). It is a value
// handed in, so stage one does no I/O; safe to call while records flow.
func (e *Engine) SetOutputLimits(byTopic map[string]int) {
	m := maps.Clone(byTopic)
	e.outLimits.Store(&m)
}

// tooLarge is the too_large error of an output over its topic's limit.
// what and name say which output ("output for route", "de"); the
// message is built only when it is too large (no allocation per record).
func (e *Engine) tooLarge(rec *kgo.Record, what, name, extra string) *RecordError {
	if n, limit := RecordSize(rec), e.OutputLimit(rec.Topic); n > limit {
		return recErr(wire.StageProduce, wire.ReasonTooLarge,
			"%s %q is %d bytes%s, over the limit of topic %q: %d bytes (limits.max_record_bytes, or the topic's max.message.bytes)", what, name, n, extra, rec.Topic, limit)
	}
	return nil
}

// Process returns the records to write for r and counts it in tally.
// Every failure of a record is a value (a dirty record with its reason);
// expressions cannot panic out of expr-lang's VM.Run, which recovers and
// returns the panic as an error (an expression_error). It is ProcessFrom
// without source progress, for engines of JSON inputs (tests, tools): a
// record that a registry-backed input could not decode for want of the
// registry returns nil and is not counted (ProcessFrom's BatchError).
func (e *Engine) Process(r *kgo.Record, tally *metrics.Tally) []*kgo.Record {
	out, _ := e.ProcessFrom(context.Background(), r, nil, tally)
	return out
}

// ProcessFrom is Process for a record of a source whose progress stage
// one tracks: srcMax, when not nil, is the maximum event time decoded on
// r's partition (math.MinInt64 before any). A decoded record raises it,
// and the records it writes to aligned window repartition topics carry
// it as it was before (wire.HeaderSourceMax). ctx bounds the schema
// registry lookups of a registry-backed input.
//
// Conservation per record lives here: r is counted consumed once, and
// then exactly once as routed (with its outputs), dirty (one dirty
// record) or dropped (no output). The one exception is a *BatchError
// (the schema registry could not answer, or ctx ended): not the
// record's fault, so nothing of it is counted, srcMax is untouched, and
// the caller aborts the batch and processes it again.
func (e *Engine) ProcessFrom(ctx context.Context, r *kgo.Record, srcMax *int64, tally *metrics.Tally) ([]*kgo.Record, error) {
	st := e.evals.get()
	defer e.evals.put(st) // after the counts: to.outs is st's
	recs, to, rerr, err := e.stageOne(ctx, st, r, srcMax, tally)
	if err != nil {
		return nil, &BatchError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
	}
	tally.Consumed[r.Topic]++
	if isRedriven(r) {
		tally.Redriven[r.Topic]++
	}
	switch {
	case rerr != nil:
		return []*kgo.Record{e.dirty(r, rerr, tally, true)}, nil
	case len(recs) == 0:
		tally.Dropped[wire.DropNoRoute]++
		return nil, nil
	}
	tally.Routed++
	to.count(e, tally)
	return recs, nil
}

// routed names the routes a routed record's outputs belong to, for the
// per-route counts.
type routed struct {
	outs  []output          // the routes' outputs
	parts []*kgo.Record     // the assembly parts
	tombs []*plan.RouteNode // the routes a tombstone went to
	// eventTime is the record's event time (epoch ms) when timed: a
	// decoded record has one, a tombstone none.
	eventTime int64
	timed     bool
}

func (to routed) count(e *Engine, tally *metrics.Tally) {
	for _, o := range to.outs {
		tally.Routes[o.Route.Name]++
		if o.Topic != "" {
			tally.AddComputedTopic(o.Route.Name, o.Topic)
		}
	}
	for _, rec := range to.parts {
		tally.Routes[e.partRoute[rec.Topic]]++
	}
	for _, rt := range to.tombs {
		tally.Routes[rt.Name]++
	}
	if to.timed && e.lagRoutes != nil {
		to.countTimes(e, tally)
	}
}

// countTimes tallies the record's event time for each route with a lag
// objective it went to (an output, or a part of an assembly).
func (to routed) countTimes(e *Engine, tally *metrics.Tally) {
	for _, o := range to.outs {
		if e.lagRoutes[o.Route.Name] {
			tally.AddEventTime(o.Route.Name, to.eventTime)
		}
	}
	for _, rec := range to.parts {
		if name := e.partRoute[rec.Topic]; e.lagRoutes[name] {
			tally.AddEventTime(name, to.eventTime)
		}
	}
}

// stageOne returns r's outputs, none (dropped), the reason r is dirty,
// or an error that is not r's (the schema registry's: nothing of r is
// decided). It counts nothing but a clamped event time.
func (e *Engine) stageOne(ctx context.Context, st *evalState, r *kgo.Record, srcMax *int64, tally *metrics.Tally) ([]*kgo.Record, routed, *RecordError, error) {
	if !e.dec.topics[r.Topic] {
		return nil, routed{}, recErr(wire.StageDecode, wire.ReasonUnknownTopic, "topic %q is not an input of this topology", r.Topic), nil
	}
	if r.Value == nil && len(e.tombstones) > 0 {
		recs, to, rerr := e.tombstone(r)
		return recs, to, rerr, nil
	}
	var d *Decoded
	var rerr *RecordError
	if _, ok := e.dec.formats[r.Topic]; ok {
		var err error
		if d, rerr, err = e.dec.decodeRegistry(ctx, e.regs[r.Topic], r.Topic, r.Value, r.Timestamp); err != nil {
			return nil, routed{}, nil, err
		}
	} else {
		d, rerr = &st.dec, e.dec.decodeInto(&st.dec, r.Topic, r.Value, r.Timestamp)
	}
	if rerr != nil {
		return nil, routed{}, rerr, nil
	}
	if d.Clamped {
		tally.Clamped++
	}
	before := int64(math.MinInt64)
	if srcMax != nil {
		before = *srcMax
		*srcMax = max(*srcMax, d.EventTime)
	}
	to, rerr := e.route(st, r, d)
	if rerr != nil {
		return nil, routed{}, rerr, nil
	}
	if rerr, err := e.resolveTopics(ctx, to.outs); err != nil {
		if srcMax != nil {
			*srcMax = before // not the record's fault: nothing of it counts
		}
		return nil, routed{}, nil, err
	} else if rerr != nil {
		return nil, routed{}, rerr, nil
	}
	recs, rerr := e.records(st, r, d, to, before, srcMax != nil)
	return recs, to, rerr, nil
}

// route evaluates the routes and the assembly parts of a decoded record.
func (e *Engine) route(st *evalState, r *kgo.Record, d *Decoded) (routed, *RecordError) {
	st.rt, st.value, st.d = e.rt, r.Value, d
	st.m = Meta{Key: r.Key, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}
	if e.headers && len(r.Headers) > 0 {
		st.m.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			st.m.Headers[h.Key] = string(h.Value)
		}
	}
	to := routed{eventTime: d.EventTime, timed: true}
	var rerr *RecordError
	if to.outs, rerr = e.rt.route(st); rerr != nil || len(e.assemblies) == 0 {
		return to, rerr
	}
	// The parts read the same variables as the routes.
	to.parts, rerr = e.parts(st, r, st.vars(), d, to.outs)
	return to, rerr
}

// records builds the records of a routed record: each route's output (to
// its window's repartition topic for a window route, with the stage-one
// headers), then the parts. One of them over its topic's limit
// (OutputLimit) makes the whole record dirty: writing the others would be
// a partial fan-out.
func (e *Engine) records(st *evalState, r *kgo.Record, d *Decoded, to routed, before int64, tracked bool) ([]*kgo.Record, *RecordError) {
	recs, block := st.newRecords(len(to.outs), len(to.parts))
	tooOld, _ := st.tooOldHeader()
	for j, o := range to.outs {
		rec := &block[j]
		*rec = kgo.Record{Topic: cmp.Or(o.Topic, o.Route.Topic), Key: o.Key, Value: o.Value, Timestamp: r.Timestamp}
		if o.Route.Window == nil {
			rec.Headers = e.stamp(st, r.Headers)
		} else {
			rec.Topic = o.Route.Window.RepartitionTopic
			aligned := tracked && o.Route.Window.Spec.Watermark == plan.WatermarkAligned
			var rerr *RecordError
			if rec.Headers, rerr = e.windowHeaders(st, r, o.Route, d, before, aligned); rerr != nil {
				return nil, rerr
			}
		}
		e.mark(rec, tooOld)
		if rerr := e.tooLarge(rec, "output for route", o.Route.Name, ""); rerr != nil {
			return nil, rerr
		}
		recs = append(recs, rec)
	}
	for _, rec := range to.parts {
		e.mark(rec, tooOld)
		if rerr := e.tooLarge(rec, "part for assembly", wire.String(rec.Headers, wire.HeaderPart), ""); rerr != nil {
			return nil, rerr
		}
	}
	return append(recs, to.parts...), nil
}

// tooOldHeader is wire.HeaderLookupTooOld naming the tables whose lookups
// answered the record too old; ok is false when none did. Every
// expression of the record has run by then (routes, keys, projections,
// parts), so each of its outputs carries the same.
func (st *evalState) tooOldHeader() (h kgo.RecordHeader, ok bool) {
	if len(st.marks.TooOld) == 0 {
		return h, false
	}
	return kgo.RecordHeader{Key: wire.HeaderLookupTooOld, Value: []byte(strings.Join(st.marks.TooOld, ","))}, true
}

// mark sets rec's wire.HeaderLookupTooOld to h, or none when h is unset
// (no Key). With tables, an input's own is dropped first (rec.Headers is
// rec's own slice, a copy of the input's): a record an upstream router
// marked, or one redriven, says what this router's lookups answered.
func (e *Engine) mark(rec *kgo.Record, h kgo.RecordHeader) {
	if !e.tables {
		return
	}
	rec.Headers = slices.DeleteFunc(rec.Headers, func(x kgo.RecordHeader) bool { return x.Key == wire.HeaderLookupTooOld })
	if h.Key != "" {
		rec.Headers = append(rec.Headers, h)
	}
}

// newRecords is room for n output records and a slice for them and
// parts more, carved from st's slabs (recordSlab): two allocations per
// slabRecords records, not one or two per record. Each piece is handed
// out once and never reused, so a caller may keep what it gets; a slab
// stays alive as long as any of its records does (the client holds them
// until they are acknowledged).
func (st *evalState) newRecords(n, parts int) ([]*kgo.Record, []kgo.Record) {
	if n+parts > slabRecords {
		return make([]*kgo.Record, 0, n+parts), make([]kgo.Record, n)
	}
	if len(st.recSlab) < n {
		st.recSlab = make([]kgo.Record, slabRecords)
	}
	if len(st.ptrSlab) < n+parts {
		st.ptrSlab = make([]*kgo.Record, slabRecords)
	}
	recs := st.ptrSlab[: 0 : n+parts]
	block := st.recSlab[:n:n]
	st.ptrSlab, st.recSlab = st.ptrSlab[n+parts:], st.recSlab[n:]
	return recs, block
}

// slabRecords is how many records (and record pointers) one slab holds.
const slabRecords = 128

// carve is room for n bytes (len 0, cap n) from st's byte slab, as
// newRecords is for records: an append past n moves to memory of its
// own, never into the next piece. st nil: an allocation of its own.
func (st *evalState) carve(n int) []byte {
	if st == nil {
		return make([]byte, 0, n)
	}
	return carveFrom(&st.byteSlab, n, slabBytes)
}

// headers is room for n headers (len 0, cap n) from st's header slab,
// as carve is for bytes.
func (st *evalState) headers(n int) []kgo.RecordHeader {
	if st == nil {
		return make([]kgo.RecordHeader, 0, n)
	}
	return carveFrom(&st.hdrSlab, n, slabHeaders)
}

// carveFrom takes n elements (len 0, cap n) off the front of *slab, a
// new slab of size when it has too few; a piece over a sixteenth of a
// slab is an allocation of its own.
func carveFrom[T any](slab *[]T, n, size int) []T {
	if n > size/16 {
		return make([]T, 0, n)
	}
	if len(*slab) < n {
		*slab = make([]T, size)
	}
	piece := (*slab)[:0:n]
	*slab = (*slab)[n:]
	return piece
}

// slabBytes and slabHeaders are the sizes of the byte and header slabs.
const (
	slabBytes   = 16 << 10
	slabHeaders = 512
)

// tombstone forwards an input tombstone to every route with tombstones:
// forward, as it came: key, headers, timestamp, null value. It has no
// fields, so no predicate is asked; without a key there is nothing to
// delete and it goes to dirty.
func (e *Engine) tombstone(r *kgo.Record) ([]*kgo.Record, routed, *RecordError) {
	if r.Key == nil {
		return nil, routed{}, recErr(wire.StageDecode, wire.ReasonNullValue,
			"value is null (a tombstone) and so is the key: there is nothing to delete, and a JSON object is expected")
	}
	recs := make([]*kgo.Record, 0, len(e.tombstones))
	for _, rt := range e.tombstones {
		rec := &kgo.Record{Topic: rt.Topic, Key: r.Key, Headers: e.stamp(nil, r.Headers), Timestamp: r.Timestamp}
		if rerr := e.tooLarge(rec, "tombstone for route", rt.Name, " (key and headers)"); rerr != nil {
			return nil, routed{}, rerr
		}
		recs = append(recs, rec)
	}
	return recs, routed{tombs: e.tombstones}, nil
}

// Dirty builds the dirty record for r and counts it in tally: the
// original key and value untouched (truncated only when too large to
// write), original headers, then the reason headers. Stage two sends its
// bad records here too.
func (e *Engine) Dirty(r *kgo.Record, rerr *RecordError, tally *metrics.Tally) *kgo.Record {
	return e.dirty(r, rerr, tally, false)
}

// stamp is a record's headers as written out: the input's, but for an
// input's own wire.HeaderTopologyVersion (and, with tables, its
// wire.HeaderLookupTooOld: see mark), then this plan's version. The
// slice comes from st's header slab (one allocation per many records).
func (e *Engine) stamp(st *evalState, in []kgo.RecordHeader) []kgo.RecordHeader {
	hs := st.headers(len(in) + 1)
	for _, h := range in {
		if h.Key != wire.HeaderTopologyVersion && (!e.tables || h.Key != wire.HeaderLookupTooOld) {
			hs = append(hs, h)
		}
	}
	return append(hs, e.version)
}

// dirty is Dirty; version: stage one's own dirty record, which names the
// version that judged it (stage two's name none).
func (e *Engine) dirty(r *kgo.Record, rerr *RecordError, tally *metrics.Tally, version bool) *kgo.Record {
	hs := make([]kgo.RecordHeader, 0, len(r.Headers)+10)
	hs = append(hs, r.Headers...)
	hs = append(hs,
		kgo.RecordHeader{Key: wire.HeaderError, Value: []byte(shorten(rerr.Err.Error(), 1000))},
		kgo.RecordHeader{Key: wire.HeaderReason, Value: []byte(rerr.Reason)},
		kgo.RecordHeader{Key: wire.HeaderStage, Value: []byte(rerr.Stage)},
		kgo.RecordHeader{Key: wire.HeaderTopic, Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: wire.HeaderPartition, Value: []byte(strconv.Itoa(int(r.Partition)))},
		kgo.RecordHeader{Key: wire.HeaderOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
		kgo.RecordHeader{Key: wire.HeaderTimestamp, Value: []byte(strconv.FormatInt(r.Timestamp.UnixMilli(), 10))},
		kgo.RecordHeader{Key: wire.HeaderAppID, Value: []byte(e.appID)},
	)
	if version {
		hs = append(hs, e.version)
	}
	d := &kgo.Record{Topic: e.dirtyTopic, Key: r.Key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp}
	if RecordSize(d) > e.maxRec {
		// Too large as-is (the input itself, its key or its headers): keep
		// the reason headers, drop the input's own headers, cut key and
		// value so the record fits and never poisons the transaction.
		tally.Truncated++
		orig := len(r.Key) + len(r.Value)
		d.Headers = append([]kgo.RecordHeader{{Key: wire.HeaderTruncated, Value: []byte(strconv.Itoa(orig))}}, hs[len(r.Headers):]...)
		// The reason headers come first; key and value get the room left,
		// so the record written is never over max_record_bytes (a record
		// the broker refuses would abort every transaction that retries it).
		d.Key, d.Value = nil, nil
		if over := RecordSize(d) - e.maxRec; over > 0 {
			eh := &d.Headers[1] // sidestream.error
			eh.Value = cutUTF8(eh.Value, len(eh.Value)-over)
		}
		room := max(e.maxRec-RecordSize(d), 0)
		d.Key = r.Key[:min(len(r.Key), 1024, room)]
		room -= len(d.Key)
		d.Value = r.Value[:min(len(r.Value), e.trunc, room)]
	}
	tally.Dirty[[2]string{rerr.Stage, rerr.Reason}]++
	return d
}

// RecordSize approximates a record's size in a batch: key, value, headers
// and per-field overhead. It errs on the large side.
func RecordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value) + 32
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 10
	}
	return n
}
