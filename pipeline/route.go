package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	gojson "github.com/goccy/go-json"

	"github.com/sidestream/sidestream/topology"
	"github.com/sidestream/sidestream/wire"
)

// output is one record a route writes.
type output struct {
	Route *topology.RouteNode
	Key   []byte
	Value []byte
}

// Meta is the Kafka side of an input record, readable by expressions.
type Meta struct {
	Key       []byte
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64 // epoch ms
	Headers   map[string]string
}

// router evaluates the routes of a topology, once per record.
type router struct {
	routes []*topology.RouteNode
	def    *topology.RouteNode
	all    bool
	avro   *avroOutputs // the avro routes' schemas and ids (WithSchemaIDs)
}

func newRouter(t *topology.Topology) *router {
	return &router{routes: t.Routes, def: t.Default, all: t.Match == topology.MatchAll}
}

// env is the variables one record's expressions see. It is built once per
// record and shared by every route's expressions.
func env(m *Meta, d *Decoded) map[string]any {
	e := make(map[string]any, len(d.Fields)+7)
	for k, v := range d.Fields {
		e[k] = v
	}
	e[topology.MetaKey] = string(m.Key)
	e[topology.MetaTopic] = m.Topic
	e[topology.MetaPartition] = int(m.Partition)
	e[topology.MetaOffset] = int(m.Offset)
	e[topology.MetaTimestamp] = int(m.Timestamp)
	e[topology.MetaEventTime] = int(d.EventTime)
	h := m.Headers
	if h == nil {
		h = map[string]string{}
	}
	e[topology.MetaHeaders] = h
	return e
}

// route returns the outputs of one decoded record; no outputs and no error
// means the record is dropped (routing.default: drop). An expression that
// fails makes the whole record dirty: partial fan-out is never written.
func (r *router) route(m *Meta, value []byte, d *Decoded) ([]output, *RecordError) {
	return r.routeEnv(env(m, d), m, value, d)
}

// routeEnv is route with the record's expression variables already built
// (the assembly parts reuse them).
func (r *router) routeEnv(e map[string]any, m *Meta, value []byte, d *Decoded) ([]output, *RecordError) {
	var outs []output
	var machine vm.VM
	for _, rt := range r.routes {
		if rt.Assembly != nil {
			continue // its parts are taken after routing (Engine.parts)
		}
		if rt.When != nil {
			res, err := machine.Run(rt.When.Program, e)
			if typ, ok := notBool(err); ok {
				return nil, recErr(wire.StageRoute, wire.ReasonPredicateType, "route %q: when %q returned %s, not bool", rt.Name, rt.When.Source, typ)
			}
			if err != nil {
				return nil, recErr(wire.StageRoute, wire.ReasonExprError, "route %q: when %q: %s", rt.Name, rt.When.Source, firstLine(err))
			}
			ok, isBool := res.(bool)
			if !isBool {
				return nil, recErr(wire.StageRoute, wire.ReasonPredicateType, "route %q: when %q returned %T, not bool", rt.Name, rt.When.Source, res)
			}
			if !ok {
				continue
			}
		}
		o, rerr := r.outputFor(&machine, rt, m, value, e, d)
		if rerr != nil {
			return nil, rerr
		}
		outs = append(outs, o)
		if !r.all {
			return outs, nil
		}
	}
	if len(outs) > 0 || r.def == nil {
		return outs, nil
	}
	o, rerr := r.outputFor(&machine, r.def, m, value, e, d)
	if rerr != nil {
		return nil, rerr
	}
	return []output{o}, nil
}

func (r *router) outputFor(machine *vm.VM, rt *topology.RouteNode, m *Meta, value []byte, e map[string]any, d *Decoded) (output, *RecordError) {
	o := output{Route: rt, Key: m.Key, Value: value}
	if rt.Window != nil {
		// Stage one of a window route: the record, unchanged, keyed by
		// its group key for the repartition topic.
		if g := rt.Window.GroupBy; g != nil {
			res, err := machine.Run(g.Program, e)
			if err != nil {
				return o, recErr(wire.StageRoute, wire.ReasonKeyError, "route %q: group_by %q: %s", rt.Name, g.Source, firstLine(err))
			}
			k, err := keyString(res)
			if err != nil {
				return o, recErr(wire.StageRoute, wire.ReasonKeyError, "route %q: group_by %q: %v", rt.Name, g.Source, err)
			}
			o.Key = []byte(k)
		}
		return o, nil
	}
	if rt.Key != nil {
		res, err := machine.Run(rt.Key.Program, e)
		if err != nil {
			return o, recErr(wire.StageRoute, wire.ReasonKeyError, "route %q: key %q: %s", rt.Name, rt.Key.Source, firstLine(err))
		}
		k, err := keyString(res)
		if err != nil {
			return o, recErr(wire.StageRoute, wire.ReasonKeyError, "route %q: key %q: %v", rt.Name, rt.Key.Source, err)
		}
		o.Key = []byte(k)
	}
	switch {
	case rt.Avro != nil:
		v, rerr := r.avroOutput(machine, rt, e, d)
		if rerr != nil {
			return o, rerr
		}
		o.Value = v
	case rt.Connect != nil:
		var vals []any
		if rt.Connect.FromInput {
			vals = make([]any, len(rt.Connect.Fields))
			for i, f := range rt.Connect.Fields {
				vals[i] = d.Fields[f.Name]
			}
		} else {
			var rerr *RecordError
			if vals, rerr = projectValues(machine, rt, e); rerr != nil {
				return o, rerr
			}
		}
		v, err := connectEnvelope(rt.Connect, vals)
		if err != nil {
			return o, recErr(wire.StageRoute, wire.ReasonConnectType, "route %q: connect-json: %v", rt.Name, err)
		}
		o.Value = v
	case rt.Value == topology.ValueProjection:
		v, rerr := project(machine, rt, e)
		if rerr != nil {
			return o, rerr
		}
		o.Value = v
	}
	return o, nil
}

// projectValues evaluates the route's projection, fields in order.
func projectValues(machine *vm.VM, rt *topology.RouteNode, e map[string]any) ([]any, *RecordError) {
	vals := make([]any, len(rt.Project))
	for i, f := range rt.Project {
		res, err := machine.Run(f.Expr.Program, e)
		if err != nil {
			return nil, recErr(wire.StageRoute, wire.ReasonProjectError, "route %q: project %q: %s", rt.Name, f.Name, firstLine(err))
		}
		vals[i] = res
	}
	return vals, nil
}

// project builds the route's JSON object, fields in the configured order.
func project(machine *vm.VM, rt *topology.RouteNode, e map[string]any) ([]byte, *RecordError) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range rt.Project {
		res, err := machine.Run(f.Expr.Program, e)
		if err != nil {
			return nil, recErr(wire.StageRoute, wire.ReasonProjectError, "route %q: project %q: %s", rt.Name, f.Name, firstLine(err))
		}
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := gojson.Marshal(f.Name)
		b.Write(name)
		b.WriteByte(':')
		val, err := gojson.Marshal(res)
		if err != nil {
			return nil, recErr(wire.StageRoute, wire.ReasonProjectError, "route %q: project %q: value %T is not JSON: %v", rt.Name, f.Name, res, err)
		}
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// keyString renders a key expression's result as the output key. Integral
// numbers print without a fraction so 42 and 42.0 key the same.
func keyString(v any) (string, error) {
	switch k := v.(type) {
	case nil:
		return "", fmt.Errorf("returned null; a key must be a string or number")
	case string:
		return k, nil
	case []byte:
		return string(k), nil
	case int:
		return strconv.Itoa(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case float64:
		if math.IsNaN(k) || math.IsInf(k, 0) {
			return "", fmt.Errorf("returned %v", k)
		}
		return strconv.FormatFloat(k, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(k), nil
	}
	b, err := gojson.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("returned %T, which has no key form: %v", v, err)
	}
	return string(b), nil
}

// notBool reports a predicate whose value was not a bool at run time (a
// JSON field is typed any until then): programs compiled as predicates end
// with a cast to bool, which fails with "invalid operation: bool(T)"
// rather than returning the value.
func notBool(err error) (typ string, ok bool) {
	var fe *file.Error
	if err == nil || !errors.As(err, &fe) {
		return "", false
	}
	const prefix = "invalid operation: bool("
	if !strings.HasPrefix(fe.Message, prefix) || !strings.HasSuffix(fe.Message, ")") {
		return "", false
	}
	return fe.Message[len(prefix) : len(fe.Message)-1], true
}

func firstLine(err error) string {
	s := err.Error()
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
