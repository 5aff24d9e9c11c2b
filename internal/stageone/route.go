package stageone

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	gojson "github.com/goccy/go-json"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// output is one record a route writes.
type output struct {
	Route *plan.RouteNode
	Topic string // the computed topic of a topic_from route, else ""
	// known is Topic's entry among the route's checked names, nil when
	// it has none (past maxKnownTopics).
	known *knownTopic
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
	routes []*plan.RouteNode
	def    *plan.RouteNode
	all    bool
	// fields are the record fields any expression reads, by number
	// (plan.Fields); metas the metadata variables.
	fields, metas []string
	fast          []fastRoute // by route, as routes
	defFast       fastRoute
	topics        map[*plan.RouteNode]*topicForm // the computed routes' (fastRoute.topic)
	avro          *avroOutputs                   // the avro routes' schemas and ids (WithSchemaIDs)
	// tableField reads a lookup() row's field for the fast forms
	// (plan.TableField); nil without tables.
	tableField plan.TableField
}

func newRouter(t *plan.Plan) *router {
	r := &router{routes: t.Routes, def: t.Default, all: t.Match == plan.MatchAll, fields: t.Fields, metas: t.Meta,
		topics: map[*plan.RouteNode]*topicForm{}, tableField: t.TableField()}
	r.fast = make([]fastRoute, len(r.routes))
	for i, rt := range r.routes {
		r.fast[i] = r.fastRoute(rt)
	}
	if r.def != nil {
		r.defFast = r.fastRoute(r.def)
	}
	return r
}

// fastRoute is the fast form (plan.Fast) of a route's predicate,
// key and group key, each nil where it has none: the record's fields by
// number are their variables, so a route that reads metadata runs the VM.
// topic is a topic_from route's computed topic (plan.FastString and the
// names checked), nil for any other route.
type fastRoute struct {
	when, key, group plan.Fast
	topic            *topicForm
}

func (r *router) fastRoute(rt *plan.RouteNode) fastRoute {
	slot := func(name string) (int, bool) {
		i := r.index(name)
		return i, i >= 0
	}
	compile := func(x *plan.Expr, predicate bool) plan.Fast {
		if x == nil {
			return nil
		}
		return plan.CompileFastTables(x.Program, predicate, slot, r.tableField)
	}
	f := fastRoute{when: compile(rt.When, true), key: compile(rt.Key, false)}
	if rt.Window != nil {
		f.group = compile(rt.Window.GroupBy, false)
	}
	if rt.TopicFrom != nil {
		// The default route may be one of routes: one form, one set of
		// checked names.
		if f.topic = r.topics[rt]; f.topic == nil {
			f.topic = &topicForm{fast: plan.CompileFastString(rt.TopicFrom.Expr.Program, slot)}
			r.topics[rt] = f.topic
		}
	}
	return f
}

// index is the number of field name (plan.Fields), -1 when no
// expression reads it.
func (r *router) index(name string) int {
	if i, ok := slices.BinarySearch(r.fields, name); ok {
		return i
	}
	return -1
}

// allMeta is every metadata variable, for env.
var allMeta = []string{plan.MetaKey, plan.MetaTopic, plan.MetaPartition, plan.MetaOffset,
	plan.MetaTimestamp, plan.MetaEventTime, plan.MetaHeaders}

// env is the variables one record's expressions see, every metadata
// variable included, in a new map (stage two's aggregates; stage one
// reuses one map per goroutine, evalState.vars).
func env(m *Meta, d *Decoded) map[string]any {
	e := make(map[string]any, len(d.Fields)+len(allMeta))
	for k, v := range d.Fields {
		e[k] = v
	}
	for _, name := range allMeta {
		e[name] = metaValue(name, m, d)
	}
	return e
}

// route returns the outputs of one decoded record; no outputs and no error
// means the record is dropped (routing.default: drop). An expression that
// fails makes the whole record dirty: partial fan-out is never written.
func (r *router) route(re *evalState) ([]output, *RecordError) {
	outs := re.outs[:0]
	for i, rt := range r.routes {
		if rt.Assembly != nil {
			continue // its parts are taken after routing (Engine.parts)
		}
		if rt.When != nil {
			ok, rerr := re.when(rt, r.fast[i].when)
			if rerr != nil {
				return nil, rerr
			}
			if !ok {
				continue
			}
		}
		o, rerr := re.outputFor(rt, r.fast[i])
		if rerr != nil {
			return nil, rerr
		}
		outs = append(outs, o)
		if !r.all {
			break
		}
	}
	if len(outs) == 0 && r.def != nil {
		o, rerr := re.outputFor(r.def, r.defFast)
		if rerr != nil {
			return nil, rerr
		}
		outs = append(outs, o)
	}
	re.outs = outs // the backing array, for the next record
	return outs, nil
}

// when is route rt's predicate on the record.
func (re *evalState) when(rt *plan.RouteNode, fast plan.Fast) (bool, *RecordError) {
	res, err := re.eval(rt.When, fast)
	if typ, ok := notBool(err); ok {
		return false, recErr(wire.StageRoute, wire.ReasonPredicateType, "route %q: when %q returned %s, not bool", rt.Name, rt.When.Source, typ)
	}
	if err != nil {
		return false, recErr(wire.StageRoute, wire.ReasonExprError, "route %q: when %q: %s", rt.Name, rt.When.Source, firstLine(err))
	}
	ok, isBool := res.(bool)
	if !isBool {
		return false, recErr(wire.StageRoute, wire.ReasonPredicateType, "route %q: when %q returned %T, not bool", rt.Name, rt.When.Source, res)
	}
	return ok, nil
}

func (re *evalState) outputFor(rt *plan.RouteNode, fast fastRoute) (output, *RecordError) {
	o := output{Route: rt, Key: re.m.Key, Value: re.value}
	if rt.TopicFrom != nil {
		var rerr *RecordError
		if o.Topic, o.known, rerr = re.computeTopic(rt, fast.topic); rerr != nil {
			return o, rerr
		}
	}
	if rt.Window != nil {
		// Stage one of a window route: the record, unchanged, keyed by
		// its group key for the repartition topic.
		if g := rt.Window.GroupBy; g != nil {
			res, err := re.eval(g, fast.group)
			if err != nil {
				return o, recErr(wire.StageRoute, wire.ReasonKeyError, "route %q: group_by %q: %s", rt.Name, g.Source, firstLine(err))
			}
			k, err := keyString(res)
			if err != nil {
				return o, recErr(wire.StageRoute, wire.ReasonKeyError, "route %q: group_by %q: %v", rt.Name, g.Source, err)
			}
			o.Key = append(re.carve(len(k)), k...)
		}
		return o, nil
	}
	if rt.Key != nil {
		res, err := re.eval(rt.Key, fast.key)
		if err != nil {
			return o, recErr(wire.StageRoute, wire.ReasonKeyError, "route %q: key %q: %s", rt.Name, rt.Key.Source, firstLine(err))
		}
		k, err := keyString(res)
		if err != nil {
			return o, recErr(wire.StageRoute, wire.ReasonKeyError, "route %q: key %q: %v", rt.Name, rt.Key.Source, err)
		}
		o.Key = append(re.carve(len(k)), k...)
	}
	switch {
	case rt.Avro != nil:
		v, rerr := re.avroOutput(rt)
		if rerr != nil {
			return o, rerr
		}
		o.Value = v
	case rt.Connect != nil:
		vals, rerr := re.typedValues(rt, rt.Connect.Fields, rt.Connect.FromInput)
		if rerr != nil {
			return o, rerr
		}
		v, err := connectEnvelope(rt.Connect, vals)
		if err != nil {
			return o, recErr(wire.StageRoute, wire.ReasonConnectType, "route %q: connect-json: %v", rt.Name, err)
		}
		o.Value = v
	case rt.Value == plan.ValueProjection:
		v, rerr := project(&re.machine, rt, re.vars())
		if rerr != nil {
			return o, rerr
		}
		o.Value = v
	}
	return o, nil
}

// typedValues are the values of a typed route's fields (connect-json,
// avro), in order: the input's own fields when the route writes them as
// they are (fromInput), else the projection's.
func (re *evalState) typedValues(rt *plan.RouteNode, fields []plan.ConnectField, fromInput bool) ([]any, *RecordError) {
	if !fromInput {
		return projectValues(&re.machine, rt, re.vars())
	}
	vals := make([]any, len(fields))
	for i, f := range fields {
		vals[i] = re.d.field(re.rt.index(f.Name), f.Name)
	}
	return vals, nil
}

// projectValues evaluates the route's projection, fields in order.
func projectValues(machine *vm.VM, rt *plan.RouteNode, e map[string]any) ([]any, *RecordError) {
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
func project(machine *vm.VM, rt *plan.RouteNode, e map[string]any) ([]byte, *RecordError) {
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
	if err == nil {
		return "", false // before fe, which escapes: no allocation per run
	}
	var fe *file.Error
	if !errors.As(err, &fe) {
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
