package processor

import (
	"math"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/topology"
	"github.com/sidestream/sidestream/wire"
)

// engine turns one input record into the records to write. It is pure:
// no I/O, safe for concurrent use, the same input always gives the same
// output (the determinism the exactly-once replay relies on).
type engine struct {
	top    *topology.Topology
	dec    *decoder
	rt     *router
	appID  string
	maxRec int
	trunc  int
	// assemblies are the assembly routes, whose parts stage one writes.
	assemblies []*topology.RouteNode
	partRoute  map[string]string // repartition topic -> assembly route
	// tombstones are the routes an input tombstone is forwarded to.
	tombstones []*topology.RouteNode
}

func newEngine(t *topology.Topology) *engine {
	var tomb []*topology.RouteNode
	for _, r := range t.Routes {
		if r.ForwardTombstones {
			tomb = append(tomb, r)
		}
	}
	return &engine{
		tombstones: tomb,
		top:        t,
		dec:        newDecoder(t),
		rt:         newRouter(t),
		appID:      t.Config.ApplicationID,
		maxRec:     t.Dirty.MaxRecordBytes,
		trunc:      t.Dirty.TruncateTo,

		assemblies: t.Assemblies(),
		partRoute:  partRoutes(t),
	}
}

func partRoutes(t *topology.Topology) map[string]string {
	m := map[string]string{}
	for _, r := range t.Assemblies() {
		m[r.Assembly.RepartitionTopic] = r.Name
	}
	return m
}

// process returns the records to write for r and counts it in tally.
// Every failure of a record is a value (a dirty record with its reason);
// expressions cannot panic out of expr-lang's VM.Run, which recovers and
// returns the panic as an error (an expression_error).
func (e *engine) process(r *kgo.Record, tally *metrics.Tally) []*kgo.Record {
	return e.processFrom(r, nil, tally)
}

// processFrom is process for a record of a source whose progress sp
// tracks (nil: none): a decoded record raises it, and the records it
// writes to window repartition topics carry it as it was before.
func (e *engine) processFrom(r *kgo.Record, sp *srcProgress, tally *metrics.Tally) []*kgo.Record {
	tally.Consumed[r.Topic]++
	if isRedriven(r) {
		tally.Redriven[r.Topic]++
	}
	if !e.dec.topics[r.Topic] {
		return []*kgo.Record{e.dirty(r, recErr(wire.StageDecode, wire.ReasonUnknownTopic, "topic %q is not an input of this topology", r.Topic), tally)}
	}
	if r.Value == nil && len(e.tombstones) > 0 {
		return e.tombstone(r, tally)
	}
	d, rerr := e.dec.decode(r.Topic, r.Value, r.Timestamp)
	if rerr != nil {
		return []*kgo.Record{e.dirty(r, rerr, tally)}
	}
	if d.Clamped {
		tally.Clamped++
	}
	before := int64(math.MinInt64)
	if sp != nil {
		before = sp.max
		sp.max = max(sp.max, d.EventTime)
	}
	m := &Meta{Key: r.Key, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli()}
	if len(r.Headers) > 0 {
		m.Headers = make(map[string]string, len(r.Headers))
		for _, h := range r.Headers {
			m.Headers[h.Key] = string(h.Value)
		}
	}
	var outs []Output
	var parts []*kgo.Record
	if len(e.assemblies) == 0 {
		outs, rerr = e.rt.route(m, r.Value, d)
	} else {
		ev := env(m, d) // shared by the routes and the parts
		if outs, rerr = e.rt.routeEnv(ev, m, r.Value, d); rerr == nil {
			parts, rerr = e.parts(r, ev, d, outs)
		}
	}
	if rerr != nil {
		return []*kgo.Record{e.dirty(r, rerr, tally)}
	}
	if len(outs) == 0 && len(parts) == 0 {
		tally.Dropped[wire.DropNoRoute]++
		return nil
	}
	recs := make([]*kgo.Record, 0, len(outs)+len(parts))
	for _, o := range outs {
		rec := &kgo.Record{Topic: o.Route.Topic, Key: o.Key, Value: o.Value, Headers: r.Headers, Timestamp: r.Timestamp}
		if o.Route.Window != nil {
			rec.Topic = o.Route.Window.RepartitionTopic
			aligned := sp != nil && o.Route.Window.Config.Watermark == topology.WatermarkAligned
			rec.Headers = repartitionHeaders(r, d.EventTime, before, aligned)
		}
		if recordSize(rec) > e.maxRec {
			// One oversized output makes the whole record dirty: writing
			// the other routes' outputs would be a partial fan-out.
			return []*kgo.Record{e.dirty(r, recErr(wire.StageProduce, wire.ReasonTooLarge,
				"output for route %q is %d bytes, over max_record_bytes %d", o.Route.Name, recordSize(rec), e.maxRec), tally)}
		}
		recs = append(recs, rec)
	}
	for _, rec := range parts {
		if recordSize(rec) > e.maxRec {
			return []*kgo.Record{e.dirty(r, recErr(wire.StageProduce, wire.ReasonTooLarge,
				"part for assembly %q is %d bytes, over max_record_bytes %d", wire.String(rec.Headers, wire.HeaderPart), recordSize(rec), e.maxRec), tally)}
		}
	}
	recs = append(recs, parts...)
	tally.Routed++
	for _, o := range outs {
		tally.Routes[o.Route.Name]++
	}
	for _, rec := range parts {
		tally.Routes[e.partRoute[rec.Topic]]++
	}
	return recs
}

// tombstone forwards an input tombstone to every route with tombstones:
// forward, as it came: key, headers, timestamp, null value. It has no
// fields, so no predicate is asked; without a key there is nothing to
// delete and it goes to dirty.
func (e *engine) tombstone(r *kgo.Record, tally *metrics.Tally) []*kgo.Record {
	if r.Key == nil {
		return []*kgo.Record{e.dirty(r, recErr(wire.StageDecode, wire.ReasonNullValue,
			"value is null (a tombstone) and so is the key: there is nothing to delete, and a JSON object is expected"), tally)}
	}
	recs := make([]*kgo.Record, 0, len(e.tombstones))
	for _, rt := range e.tombstones {
		rec := &kgo.Record{Topic: rt.Topic, Key: r.Key, Headers: r.Headers, Timestamp: r.Timestamp}
		if recordSize(rec) > e.maxRec {
			return []*kgo.Record{e.dirty(r, recErr(wire.StageProduce, wire.ReasonTooLarge,
				"tombstone for route %q is %d bytes (key and headers), over max_record_bytes %d", rt.Name, recordSize(rec), e.maxRec), tally)}
		}
		recs = append(recs, rec)
	}
	tally.Routed++
	for _, rt := range e.tombstones {
		tally.Routes[rt.Name]++
	}
	return recs
}

// dirty builds the dirty record for r: the original key and value
// untouched (truncated only when too large to write), original headers,
// then the reason headers.
func (e *engine) dirty(r *kgo.Record, rerr *RecordError, tally *metrics.Tally) *kgo.Record {
	hs := make([]kgo.RecordHeader, 0, len(r.Headers)+9)
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
	d := &kgo.Record{Topic: e.top.Dirty.Topic, Key: r.Key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp}
	if recordSize(d) > e.maxRec {
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
		if over := recordSize(d) - e.maxRec; over > 0 {
			eh := &d.Headers[1] // sidestream.error
			eh.Value = cutUTF8(eh.Value, len(eh.Value)-over)
		}
		room := max(e.maxRec-recordSize(d), 0)
		d.Key = r.Key[:min(len(r.Key), 1024, room)]
		room -= len(d.Key)
		d.Value = r.Value[:min(len(r.Value), e.trunc, room)]
	}
	tally.Dirty[[2]string{rerr.Stage, rerr.Reason}]++
	return d
}

// recordSize approximates a record's size in a batch: key, value, headers
// and per-field overhead. It errs on the large side.
func recordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value) + 32
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value) + 10
	}
	return n
}

// repartitionHeaders carry what stage two needs from stage one: the event
// time (extracted once), where the record came from and, when aligned,
// its source's maximum event time before it.
func repartitionHeaders(r *kgo.Record, eventTime, before int64, aligned bool) []kgo.RecordHeader {
	hs := make([]kgo.RecordHeader, 0, len(r.Headers)+6)
	hs = append(hs, r.Headers...)
	if aligned {
		var b []byte
		if before != math.MinInt64 {
			b = []byte(strconv.FormatInt(before, 10))
		}
		hs = append(hs, kgo.RecordHeader{Key: wire.HeaderSourceMax, Value: b})
	}
	return append(hs,
		kgo.RecordHeader{Key: wire.HeaderEventTime, Value: []byte(strconv.FormatInt(eventTime, 10))},
		kgo.RecordHeader{Key: wire.HeaderSourceKey, Value: r.Key},
		kgo.RecordHeader{Key: wire.HeaderTopic, Value: []byte(r.Topic)},
		kgo.RecordHeader{Key: wire.HeaderPartition, Value: []byte(strconv.Itoa(int(r.Partition)))},
		kgo.RecordHeader{Key: wire.HeaderOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))},
	)
}

// processRepartitioned is stage two for one record of a repartition
// topic. A bad record is a dirty record; an error is the task's store
// failing, which may hold part of the record's writes: the batch aborts
// and the task is rebuilt from its changelog (never a dirty record).
func (e *engine) processRepartitioned(r *kgo.Record, t *windowTask, tally *metrics.Tally) ([]*kgo.Record, error) {
	if isMark(r) {
		return e.processMark(r, t, tally)
	}
	tally.Consumed[r.Topic]++
	return e.processWindow(r, t, tally)
}

// processAssemblyRecord is stage two of an assembly route for one record
// of its repartition topic, with processRepartitioned's contract.
func (e *engine) processAssemblyRecord(r *kgo.Record, t *assemblyTask, now time.Time, tally *metrics.Tally) ([]*kgo.Record, error) {
	tally.Consumed[r.Topic]++
	return e.processAssembly(r, t, now, tally)
}
