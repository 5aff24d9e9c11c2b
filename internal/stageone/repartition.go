package stageone

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/expr-lang/expr/vm"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// The records stage one writes to a repartition topic, and what stage two
// reads back of them.

// repartitionHeaders carry what stage two needs from stage one: the
// input's own headers, then one envelope (wire.HeaderRepartition) with
// the event time (extracted once), where the record came from and, when
// aligned, its source's maximum event time before it; with room for one
// more header (the part name of an assembly part). fields: the envelope
// ends with the fields header's value, which fill appends to it (the
// fields a window route's aggregates read). Under
// topics.repartition_format: headers the envelope is expanded into the
// seven text headers it replaced (wire.ExpandRepartition).
func (e *Engine) repartitionHeaders(st *evalState, r *kgo.Record, eventTime, before int64, aligned bool, fields int, fill func([]byte) ([]byte, error)) ([]kgo.RecordHeader, error) {
	hs := st.headers(len(r.Headers) + 2)
	hs = append(hs, r.Headers...)
	env := wire.Envelope{
		EventTime: eventTime, Aligned: aligned, SourceMax: before,
		Partition: int64(r.Partition), Offset: r.Offset,
		Topic: []byte(r.Topic), Key: r.Key, HasKey: r.Key != nil, HasFields: fill != nil,
	}
	b := wire.AppendEnvelope(st.carve(wire.EnvelopeSize(&env)+fields), &env)
	if fill != nil {
		var err error
		if b, err = fill(b); err != nil {
			return nil, err
		}
	}
	// Nothing appends to a record's header values once built.
	hs = append(hs, kgo.RecordHeader{Key: wire.HeaderRepartition, Value: b[:len(b):len(b)]})
	if e.expand {
		hs = wire.ExpandRepartition(hs)
	}
	return hs, nil
}

// windowPlan is what the two stages need of one window route's
// aggregates: the input fields they read, sorted (what stage one carries
// to stage two, wire.HeaderFields), and by aggregate its fast form
// (plan.Fast) over the fields by number (plan.Fields), nil for a
// count. byFast: every aggregate is a count or has one, so stage two
// reads a record's fields by number, without a map (WindowValues).
type windowPlan struct {
	names  []string
	fast   []plan.Fast
	byFast bool
	// slot numbers a field named in a fields header (plan.Fields).
	slot func(name []byte) (int, bool)
}

// windowFields are the window routes' plans (windowPlan).
func windowFields(t *plan.Plan) map[*plan.RouteNode]*windowPlan {
	slot := func(name string) (int, bool) { return slices.BinarySearch(t.Fields, name) }
	index := make(map[string]int, len(t.Fields))
	for i, f := range t.Fields {
		index[f] = i
	}
	byteSlot := func(name []byte) (int, bool) {
		i, ok := index[string(name)]
		return i, ok
	}
	out := map[*plan.RouteNode]*windowPlan{}
	for _, rt := range t.Windows() {
		set := map[string]bool{}
		p := &windowPlan{fast: make([]plan.Fast, len(rt.Window.Aggregates)), byFast: true, slot: byteSlot}
		for i, a := range rt.Window.Aggregates {
			if a.Of == nil {
				continue
			}
			for _, f := range a.Of.Fields {
				set[f] = true
			}
			// An aggregate that reads metadata has no fast form: its
			// variables are not fields (slot).
			p.fast[i] = plan.CompileFast(a.Of.Program, false, slot)
			p.byFast = p.byFast && p.fast[i] != nil
		}
		p.names = slices.Sorted(maps.Keys(set))
		out[rt] = p
	}
	return out
}

// noFields is the fields header of a route whose aggregates read none.
var noFields, _ = wire.AppendFields(nil, nil, nil)

// windowHeaders are the stage-one headers of a window route's record
// (repartitionHeaders) and the fields its aggregates read, as decoded
// (wire.HeaderFields): stage two evaluates the aggregates on those, so
// it never decodes the value again, whatever the input's format.
func (e *Engine) windowHeaders(st *evalState, r *kgo.Record, rt *plan.RouteNode, d *Decoded, before int64, aligned bool) ([]kgo.RecordHeader, *RecordError) {
	names := e.winFields[rt].names
	if len(names) == 0 {
		// A route of bare counts reads no field.
		hs, _ := e.repartitionHeaders(st, r, d.EventTime, before, aligned, len(noFields), func(b []byte) ([]byte, error) {
			return append(b, noFields...), nil
		})
		return hs, nil
	}
	get := func(j int) (any, bool) {
		v, ok := d.Fields[names[j]]
		return v, ok
	}
	if d.vals != nil {
		// A JSON input's fields are by number (decode.go): the few the
		// aggregates read, by name. A null and an absent field are both
		// nil there, as they are to an expression: neither is carried.
		get = func(j int) (any, bool) {
			i, ok := e.dec.index[names[j]]
			if !ok {
				i = -1
			}
			v := d.field(i, names[j])
			return v, v != nil
		}
	}
	hs, err := e.repartitionHeaders(st, r, d.EventTime, before, aligned, 2+24*len(names), func(b []byte) ([]byte, error) {
		return wire.AppendFieldsFunc(b, names, get)
	})
	if err != nil {
		return nil, recErr(wire.StageWindow, wire.ReasonBadFields, "route %q: %v", rt.Name, err)
	}
	return hs, nil
}

// RepartitionedFields are the fields of a repartitioned record that
// window route aggregates read: those stage one carried (its envelope's,
// wire.ReadRepartition, or for a record written before the envelope the
// last wire.HeaderFields, as stage one appended it after the input's own
// headers), or, for a record without them (written by an
// older version or a foreign writer) or of a fields version this build
// does not know, its JSON value decoded (DecodeFields). A fields header
// that does not decode makes the record dirty (wire.ReasonBadFields).
func (e *Engine) RepartitionedFields(r *kgo.Record) (*Decoded, *RecordError) {
	h := wire.ReadRepartition(r.Headers)
	if h.HasFields {
		m, err := wire.DecodeFields(h.Fields)
		if err == nil {
			return &Decoded{Fields: m}, nil
		}
		if !errors.Is(err, wire.ErrFieldsVersion) {
			return nil, recErr(wire.StageWindow, wire.ReasonBadFields, "repartitioned record: %v", err)
		}
	}
	d, rerr := e.DecodeFields(r.Value)
	if rerr != nil {
		if f, ok := e.dec.formats[string(h.Topic)]; ok {
			rerr.Err = fmt.Errorf("%w: its input is %s, and the record has no readable %s header (written by an older version?)", rerr.Err, f, wire.HeaderFields)
		}
	}
	return d, rerr
}

// SourceKey is the key of the input record a repartitioned record came
// from (wire.HeaderSourceKey), nil when it has none.
func SourceKey(r *kgo.Record) []byte {
	return wire.ReadRepartition(r.Headers).SourceKey
}

// DecodeFields extracts the referenced fields of a repartitioned record:
// its bytes were validated (and schema-checked) by stage one, so only a
// cheap validity scan guards against foreign writers.
func (e *Engine) DecodeFields(value []byte) (*Decoded, *RecordError) {
	d := e.dec
	if !gjson.ValidBytes(value) {
		return nil, recErr(wire.StageWindow, wire.ReasonInvalidJSON, "repartitioned value is not valid JSON")
	}
	out := &Decoded{Fields: make(map[string]any, len(d.fields))}
	var ferr *RecordError
	gjson.ParseBytes(value).ForEach(func(k, v gjson.Result) bool {
		if d.fields[k.Str] {
			fv, err := jsonValue(v)
			if err != nil {
				ferr = recErr(wire.StageWindow, wire.ReasonInvalidJSON, "field %q: %v", k.Str, err)
				return false
			}
			out.Fields[k.Str] = fv
		}
		return true
	})
	return out, ferr
}

// AggregateValues evaluates each aggregate's expression of window route
// rt for one repartitioned record. The variables map is built only for
// an aggregate that runs the VM (a count reads nothing).
func (e *Engine) AggregateValues(rt *plan.RouteNode, m *Meta, d *Decoded) ([]any, *RecordError) {
	var ev map[string]any
	vals := make([]any, len(rt.Window.Aggregates))
	var machine vm.VM
	for i, a := range rt.Window.Aggregates {
		if a.Of == nil {
			vals[i] = true // a bare count counts the record
			continue
		}
		if ev == nil {
			ev = env(m, d)
		}
		v, err := machine.Run(a.Of.Program, ev)
		if err != nil {
			return nil, recErr(wire.StageWindow, wire.ReasonAggregate, "route %q: aggregate %q: %s", rt.Name, a.Name, firstLine(err))
		}
		vals[i] = v
	}
	return vals, nil
}

// WindowScratch is what stage two's reads of one window record reuse
// from the record before: the fields by number and the aggregate
// values. One per window task: it is not safe for concurrent use.
type WindowScratch struct {
	fields []any // by number (plan.Fields)
	vals   []any
}

// NewWindowScratch is a WindowScratch for this Engine's topology.
func (e *Engine) NewWindowScratch() *WindowScratch {
	return &WindowScratch{fields: make([]any, len(e.dec.index))}
}

// WindowValues are the aggregate values of window route rt for one
// repartitioned record r, h its headers (wire.ReadRepartition, its event
// time read) and m its metadata: what RepartitionedFields and then
// AggregateValues give, results and errors, but read without a map when
// the fields header decodes by number (wire.DecodeFieldsInto) and every
// aggregate is a count or a fast form that decides; any other record
// takes those two functions. The values are s's until its next use.
func (e *Engine) WindowValues(rt *plan.RouteNode, r *kgo.Record, h *wire.Repartition, m *Meta, s *WindowScratch) ([]any, *RecordError) {
	if p := e.winFields[rt]; p != nil && p.byFast && h.HasFields {
		if vals, ok := e.fastValues(p, h.Fields, s); ok {
			return vals, nil
		}
	}
	d, rerr := e.RepartitionedFields(r)
	if rerr != nil {
		return nil, rerr
	}
	d.EventTime = h.EventTime
	return e.AggregateValues(rt, m, d)
}

// fastValues are the aggregates of plan p on the fields header b, false
// when the header does not decode by number or a fast form does not
// decide.
func (e *Engine) fastValues(p *windowPlan, b []byte, s *WindowScratch) ([]any, bool) {
	if len(s.fields) != len(e.dec.index) {
		s.fields = make([]any, len(e.dec.index)) // a zero WindowScratch
	}
	defer clear(s.fields) // let go of this record's values
	if !wire.DecodeFieldsInto(b, p.slot, s.fields) {
		return nil, false
	}
	s.vals = slices.Grow(s.vals[:0], len(p.fast))[:len(p.fast)]
	for i, f := range p.fast {
		if f == nil {
			s.vals[i] = true // a bare count counts the record
			continue
		}
		v, ok := f(s.fields)
		if !ok {
			return nil, false
		}
		s.vals[i] = v
	}
	return s.vals, true
}

// OverflowRecord is the repartitioned record, value unchanged, on the
// route's overflow route, keyed by its source key, with the limit it met.
// The stage-one headers (source topic, partition, offset, event time)
// stay, so tail shows where it came from and redrive can replay it.
func OverflowRecord(rt *plan.RouteNode, r *kgo.Record, key []byte, limit string, maxv, size int64) *kgo.Record {
	hs := make([]kgo.RecordHeader, 0, len(r.Headers)+4)
	hs = append(hs, r.Headers...)
	hs = append(hs,
		kgo.RecordHeader{Key: wire.HeaderOverflowRoute, Value: []byte(rt.Name)},
		kgo.RecordHeader{Key: wire.HeaderOverflowLimit, Value: []byte(limit)},
		kgo.RecordHeader{Key: wire.HeaderOverflowMax, Value: []byte(strconv.FormatInt(maxv, 10))},
		kgo.RecordHeader{Key: wire.HeaderOverflowSize, Value: []byte(strconv.FormatInt(size, 10))},
	)
	return &kgo.Record{Topic: rt.OverflowTopic(), Key: key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp}
}
