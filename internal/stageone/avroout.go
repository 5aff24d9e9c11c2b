package stageone

import (
	"fmt"
	"sync/atomic"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// SchemaIDs are the schema registry ids of the avro routes' record
// schemas, by route name. The processor registers the schemas before its
// first poll and sets them once (stage one holds no client); they are
// read on every record, from any goroutine.
type SchemaIDs struct {
	byRoute atomic.Pointer[map[string]int]
}

// NewSchemaIDs returns ids set to byRoute (nil: none yet, Set follows).
func NewSchemaIDs(byRoute map[string]int) *SchemaIDs {
	s := &SchemaIDs{}
	if byRoute != nil {
		s.Set(byRoute)
	}
	return s
}

// Set replaces the ids; byRoute is not modified afterwards.
func (s *SchemaIDs) Set(byRoute map[string]int) { s.byRoute.Store(&byRoute) }

func (s *SchemaIDs) id(route string) (int, bool) {
	if s == nil {
		return 0, false
	}
	m := s.byRoute.Load()
	if m == nil {
		return 0, false
	}
	id, ok := (*m)[route]
	return id, ok
}

// WithSchemaIDs sets the schema ids of the topology's avro routes (format
// avro). Every avro route needs one: a value of a route without its id is
// refused as avro_encode (a wiring mistake no data can reach: the
// processor registers every avro route before it polls).
func WithSchemaIDs(ids *SchemaIDs) Option {
	return func(e *Engine) { e.rt.avro = newAvroOutputs(e.rt.routes, ids) }
}

// avroOutputs are the avro routes' parsed record schemas and their ids.
type avroOutputs struct {
	ids    *SchemaIDs
	routes map[string]*avroRoute
}

type avroRoute struct {
	schema avro.Schema
	err    error // the schema did not parse (the topology derives valid ones)
}

func newAvroOutputs(routes []*plan.RouteNode, ids *SchemaIDs) *avroOutputs {
	a := &avroOutputs{ids: ids, routes: map[string]*avroRoute{}}
	for _, rt := range routes {
		if rt.Avro == nil {
			continue
		}
		s, err := avro.Parse(rt.Avro.Schema)
		a.routes[rt.Name] = &avroRoute{schema: s, err: err}
	}
	return a
}

// encode writes vals (in the order of the route's fields) as Avro binary
// behind the Confluent header of the route's schema id. A value that does
// not fit its field's type is an error, never a value of another type.
func (a *avroOutputs) encode(rt *plan.RouteNode, vals []any) ([]byte, error) {
	if a == nil {
		return nil, fmt.Errorf("no schema id is registered for the route")
	}
	ar := a.routes[rt.Name]
	id, ok := a.ids.id(rt.Name)
	switch {
	case ar == nil || !ok:
		return nil, fmt.Errorf("no schema id is registered for the route")
	case ar.err != nil:
		return nil, fmt.Errorf("record schema: %v", ar.err)
	}
	rec := make(map[string]any, len(rt.Avro.Fields))
	for i, f := range rt.Avro.Fields {
		var v any
		if i < len(vals) {
			v = vals[i]
		}
		x, err := avroValue(f.Type, v)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Name, err)
		}
		rec[f.Name] = x
	}
	payload, err := avro.Marshal(ar.schema, rec)
	if err != nil {
		return nil, err
	}
	var h sr.ConfluentHeader
	b, err := h.AppendEncode(make([]byte, 0, 5+len(payload)), id, nil)
	if err != nil {
		return nil, err
	}
	return append(b, payload...), nil
}

// avroValue converts v to the Go value hamba writes for the union
// ["null", T] of Connect type typ: nil, int64 (long), float64 (double),
// string, bool. The rules are connect-json's: an integral float is a
// long; an int is a double; nothing else converts.
func avroValue(typ string, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch typ {
	case plan.ConnectString:
		switch s := v.(type) {
		case string:
			return s, nil
		case []byte:
			return string(s), nil
		}
	case plan.ConnectBoolean:
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case plan.ConnectInt64:
		if i, ok := asInt64(v); ok {
			return i, nil
		}
	case plan.ConnectFloat64:
		if f, ok := asFloat64(v); ok {
			return f, nil
		}
	default:
		return nil, fmt.Errorf("unknown field type %q", typ)
	}
	return nil, fmt.Errorf("%s is not a %s", describeValue(v), plan.AvroType(typ))
}

// avroOutput is an avro route's value for one record: the projection's
// values (or the input fields the route writes), encoded.
func (re *evalState) avroOutput(rt *plan.RouteNode) ([]byte, *RecordError) {
	vals, rerr := re.typedValues(rt, rt.Avro.Fields, rt.Avro.FromInput)
	if rerr != nil {
		return nil, rerr
	}
	v, err := re.rt.avro.encode(rt, vals)
	if err != nil {
		return nil, recErr(wire.StageRoute, wire.ReasonAvroEncode, "route %q: avro: %v", rt.Name, err)
	}
	return v, nil
}

// AvroWindowValue turns one window result (the operator's JSON, see
// window.Result) into the avro route's value: the fields of
// ConnectWindowValue (group_key, window_start, window_end, the
// aggregates, revision, final) in Avro binary behind the Confluent header.
// An error is the result's: it goes to dirty as avro_encode.
func (e *Engine) AvroWindowValue(rt *plan.RouteNode, value []byte) ([]byte, error) {
	if rt.Avro == nil || rt.Window == nil {
		return nil, fmt.Errorf("route %q is not an avro window route", rt.Name)
	}
	vals, err := windowFieldValues(rt.Avro.Fields, value)
	if err != nil {
		return nil, err
	}
	return e.rt.avro.encode(rt, vals)
}
