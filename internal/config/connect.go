package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Output formats of a route (routes[].format).
const (
	// OutputRaw writes the input bytes untouched (value: original).
	OutputRaw = "raw"
	// OutputJSON writes the projection as a JSON object, or a window
	// route's results.
	OutputJSON = "json"
	// OutputConnectJSON writes the same fields wrapped in Kafka Connect's
	// JsonConverter envelope {"schema":...,"payload":...}, the schema
	// derived from the projection's types or the input JSON Schema, so
	// schema-requiring sinks (JDBC) accept the records.
	OutputConnectJSON = "connect-json"
)

// Kafka Connect schema types a connect-json field can have. Every field is
// optional: null is always a valid payload value.
const (
	ConnectString  = "string"
	ConnectInt64   = "int64"
	ConnectFloat64 = "double" // JsonConverter's name of FLOAT64
	ConnectBoolean = "boolean"
)

// The fields of a window route's connect-json payload besides its
// aggregates, in payload order: key, window_start, window_end,
// <aggregates...>, revision, final.
var windowConnectFixed = []ConnectField{
	{Name: "group_key", Type: ConnectString},
	{Name: "window_start", Type: ConnectInt64},
	{Name: "window_end", Type: ConnectInt64},
}

var windowConnectTail = []ConnectField{
	{Name: "revision", Type: ConnectInt64},
	{Name: "final", Type: ConnectBoolean},
}

// ConnectField is one field of a connect-json payload.
type ConnectField struct {
	Name string
	Type string // ConnectString, ConnectInt64, ConnectFloat64, ConnectBoolean
}

// ConnectSchema is the compiled Kafka Connect schema of a connect-json
// route: its fields in payload order and the envelope's schema part,
// rendered once.
type ConnectSchema struct {
	Fields []ConnectField
	// FromInput is set when the fields are the input JSON Schema's
	// top-level properties (a route without a projection): the payload
	// takes each field's value from the record.
	FromInput bool
	// Schema is the JSON of the envelope's "schema" member.
	Schema []byte
}

// NewConnectSchema returns the schema of a connect-json payload with
// these fields, in order.
func NewConnectSchema(fields []ConnectField) *ConnectSchema {
	return &ConnectSchema{Fields: fields, Schema: connectSchemaJSON(fields)}
}

// connectSchemaJSON renders the Connect struct schema of fields.
func connectSchemaJSON(fields []ConnectField) []byte {
	type field struct {
		Field    string `json:"field"`
		Type     string `json:"type"`
		Optional bool   `json:"optional"`
	}
	s := struct {
		Type     string  `json:"type"`
		Optional bool    `json:"optional"`
		Fields   []field `json:"fields"`
	}{Type: "struct", Fields: make([]field, 0, len(fields))}
	for _, f := range fields {
		s.Fields = append(s.Fields, field{Field: f.Name, Type: f.Type, Optional: true})
	}
	b, _ := json.Marshal(s) // plain strings and bools: cannot fail
	return b
}

// inputSchema is one input and its JSON Schema (nil when it has none).
type inputSchema struct {
	topic  string
	schema *jsonschema.Schema
}

// connectProblem is a reason a route's connect-json schema cannot be
// derived, at a config path.
type connectProblem struct {
	path, msg string
}

// connectSchema derives the connect-json schema of route r (at path p);
// an avro route's fields are the same (messages name r.Format).
// exprs are the compiled projection expressions (nil where one did not
// compile: its own error is reported elsewhere), aggs the compiled
// aggregate expressions of a window route likewise.
func connectSchema(p string, r Route, exprs []*Expr, aggs []*Expr, inputs []inputSchema) (*ConnectSchema, []connectProblem) {
	var (
		fields []ConnectField
		probs  []connectProblem
		from   bool
	)
	switch {
	case r.Window != nil:
		fields, probs = windowConnectFields(p, r, aggs, inputs)
	case len(r.Project) > 0:
		fields, probs = projectConnectFields(p, r, exprs, inputs)
	default:
		from = true
		fields, probs = inputConnectFields(p, r.Format, inputs)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return &ConnectSchema{Fields: fields, FromInput: from, Schema: connectSchemaJSON(fields)}, nil
}

const connectTypeHint = "wrap it as string(...), int(...), float(...) or bool(...), or declare the field's type in the input's JSON Schema"

// windowConnectFields: the window payload's fixed fields around one field
// per aggregate (first/last take the type of what they keep).
func windowConnectFields(p string, r Route, aggs []*Expr, inputs []inputSchema) ([]ConnectField, []connectProblem) {
	var (
		fields []ConnectField
		probs  []connectProblem
	)
	hint := connectTypeHint
	fields = append(fields, windowConnectFixed...)
	reserved := map[string]bool{}
	for _, f := range append(append([]ConnectField{}, windowConnectFixed...), windowConnectTail...) {
		reserved[f.Name] = true
	}
	for i, a := range r.Window.Aggregates {
		ap := fmt.Sprintf("%s.window.aggregates[%d]", p, i)
		if reserved[a.Name] {
			probs = append(probs, connectProblem{ap + ".name", fmt.Sprintf("%s: aggregate name %q is also a field of the %s window payload (group_key, window_start, window_end, revision, final); rename it", ap, a.Name, r.Format)})
			continue
		}
		var t string
		switch a.Fn {
		case "count", "distinct_count":
			t = ConnectInt64
		case "sum", "min", "max", "avg":
			t = ConnectFloat64
		default: // first, last: the type of what they keep
			var e *Expr
			if i < len(aggs) {
				e = aggs[i]
			}
			if e == nil {
				continue
			}
			var ok bool
			if t, ok = exprConnectType(e, inputs); !ok {
				probs = append(probs, connectProblem{ap + ".of", fmt.Sprintf("%s: format %s needs the type of %s(%s); %s", ap, r.Format, a.Fn, a.Of, hint)})
				continue
			}
		}
		fields = append(fields, ConnectField{Name: a.Name, Type: t})
	}
	fields = append(fields, windowConnectTail...)
	return fields, probs
}

// projectConnectFields: one field per projected expression, typed.
func projectConnectFields(p string, r Route, exprs []*Expr, inputs []inputSchema) ([]ConnectField, []connectProblem) {
	var (
		fields []ConnectField
		probs  []connectProblem
	)
	hint := connectTypeHint
	for i, f := range r.Project {
		if i >= len(exprs) || exprs[i] == nil {
			continue
		}
		t, ok := exprConnectType(exprs[i], inputs)
		if !ok {
			fp := fieldPath(p+".project", f.Name)
			probs = append(probs, connectProblem{fp, fmt.Sprintf("%s: format %s needs the type of %q; %s", fp, r.Format, f.Expr, hint)})
			continue
		}
		fields = append(fields, ConnectField{Name: f.Name, Type: t})
	}
	return fields, probs
}

// inputConnectFields: the input's own fields, from its JSON Schema (the
// same on every input).
func inputConnectFields(p, format string, inputs []inputSchema) ([]ConnectField, []connectProblem) {
	var probs []connectProblem
	var first []ConnectField
	for i, in := range inputs {
		if in.schema == nil {
			probs = append(probs, connectProblem{p + ".format", fmt.Sprintf("%s: format %s needs a projection (project) or a JSON Schema on every input; input %q has none", p, format, in.topic)})
			return nil, probs
		}
		fs, err := schemaFields(in.schema)
		if err != nil {
			probs = append(probs, connectProblem{p + ".format", fmt.Sprintf("%s: format %s from the JSON Schema of input %q: %v; project the fields instead", p, format, in.topic, err)})
			return nil, probs
		}
		if i == 0 {
			first = fs
		} else if !reflect.DeepEqual(first, fs) {
			probs = append(probs, connectProblem{p + ".format", fmt.Sprintf("%s: format %s: the JSON Schemas of inputs %q and %q give different fields; project the fields instead", p, format, inputs[0].topic, in.topic)})
			return nil, probs
		}
	}
	return first, nil
}

// exprConnectType is the Connect type of an expression's value: its static
// type when expr-lang knows it (string(x), int(x), x > 1, _key, ...), else,
// for a bare field name, the type every input's JSON Schema gives it.
func exprConnectType(e *Expr, inputs []inputSchema) (string, bool) {
	node := e.Program.Node()
	if t := node.Type(); t != nil {
		if ct, ok := goConnectType(t); ok {
			return ct, true
		}
	}
	var name string
	switch n := node.(type) {
	case *ast.IdentifierNode:
		name = n.Value
	case *ast.MemberNode: // $env.x, $env["x"]
		if id, ok := n.Node.(*ast.IdentifierNode); ok && id.Value == "$env" {
			if s, ok := n.Property.(*ast.StringNode); ok {
				name = s.Value
			}
		}
	}
	if name == "" || IsMeta(name) || len(inputs) == 0 {
		return "", false
	}
	var out string
	for _, in := range inputs {
		if in.schema == nil {
			return "", false
		}
		prop, ok := in.schema.Properties[name]
		if !ok {
			return "", false
		}
		t, ok := jsonSchemaConnectType(prop)
		if !ok || (out != "" && out != t) {
			return "", false
		}
		out = t
	}
	return out, true
}

func goConnectType(t reflect.Type) (string, bool) {
	switch t.Kind() {
	case reflect.String:
		return ConnectString, true
	case reflect.Bool:
		return ConnectBoolean, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return ConnectInt64, true
	case reflect.Float32, reflect.Float64:
		return ConnectFloat64, true
	}
	return "", false
}

// jsonSchemaConnectType maps a property's "type" (null aside) to a Connect
// type: string, integer, number (or integer+number), boolean.
func jsonSchemaConnectType(s *jsonschema.Schema) (string, bool) {
	for s.Types == nil && s.Ref != nil {
		s = s.Ref
	}
	if s.Types == nil {
		return enumConnectType(s)
	}
	var ts []string
	for _, t := range s.Types.ToStrings() {
		if t != "null" {
			ts = append(ts, t)
		}
	}
	switch strings.Join(ts, ",") {
	case "string":
		return ConnectString, true
	case "integer":
		return ConnectInt64, true
	case "number", "number,integer", "integer,number":
		return ConnectFloat64, true
	case "boolean":
		return ConnectBoolean, true
	}
	return "", false
}

// enumConnectType types an untyped enum by its values: all strings (nulls
// aside) make a string, all booleans a boolean.
func enumConnectType(s *jsonschema.Schema) (string, bool) {
	if s.Enum == nil || len(s.Enum.Values) == 0 {
		return "", false
	}
	var strs, bools int
	for _, v := range s.Enum.Values {
		switch v.(type) {
		case nil:
		case string:
			strs++
		case bool:
			bools++
		default:
			return "", false
		}
	}
	switch {
	case strs > 0 && bools == 0:
		return ConnectString, true
	case bools > 0 && strs == 0:
		return ConnectBoolean, true
	}
	return "", false
}

// schemaFields lists a JSON Schema's top-level properties as Connect
// fields, sorted by name (a schema's properties have no order).
func schemaFields(s *jsonschema.Schema) ([]ConnectField, error) {
	if len(s.Properties) == 0 {
		return nil, fmt.Errorf("it declares no top-level properties")
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]ConnectField, 0, len(names))
	for _, n := range names {
		t, ok := jsonSchemaConnectType(s.Properties[n])
		if !ok {
			return nil, fmt.Errorf("property %q is not one of string, integer, number, boolean", n)
		}
		out = append(out, ConnectField{Name: n, Type: t})
	}
	return out, nil
}

// inputFields lists the record fields a connect-json route without a
// projection reads.
func (c *ConnectSchema) inputFields() []string {
	if c == nil || !c.FromInput {
		return nil
	}
	out := make([]string, len(c.Fields))
	for i, f := range c.Fields {
		out[i] = f.Name
	}
	return out
}

// validateFormat checks a route's format against its value, and derives
// the connect-json schema so a field of unknown type fails here, at its
// line, rather than as dirty records at run time.
func (d *doc) validateFormat(p string, r Route, inputs []inputSchema) {
	if r.Assemble != nil {
		// The assembled value nests each part's JSON under its name, which
		// has no flat Connect schema.
		if r.Format != OutputJSON {
			d.at(p+".format", "%s.format: an assembly route writes the assembled record as JSON (parts nested under their names); only %q is supported, got %q", p, OutputJSON, r.Format)
		}
		return
	}
	switch r.Format {
	case OutputRaw:
		if r.Window != nil {
			d.at(p+".format", "%s.format is %q, but a window route writes window results (JSON): use %q or %q", p, OutputRaw, OutputJSON, OutputConnectJSON)
		} else if r.Value == ValueProjection {
			d.at(p+".format", "%s.format is %q (the input bytes, untouched) but the route projects; use %q or %q", p, OutputRaw, OutputJSON, OutputConnectJSON)
		}
		return
	case OutputJSON:
		if r.Window == nil && r.Value != ValueProjection {
			d.at(p+".format", "%s.format %q writes the projection: add project (or use %q to pass the input bytes through)", p, OutputJSON, OutputRaw)
		}
		return
	case OutputConnectJSON, OutputAvro:
	default:
		d.at(p+".format", "%s.format must be %q, %q, %q or %q, got %q", p, OutputRaw, OutputJSON, OutputConnectJSON, OutputAvro, r.Format)
		return
	}
	if r.Window == nil && r.Value == ValueOriginal && len(r.Project) == 0 && d.has(p+".value") {
		d.at(p+".value", "%s.value is %q (the input bytes, untouched) but format is %q, which rewrites them; remove value", p, ValueOriginal, r.Format)
		return
	}
	var exprs, aggs []*Expr
	for _, f := range r.Project {
		e, _ := CompileExpr(f.Expr, false) // its own error is reported by the project check
		exprs = append(exprs, e)
	}
	if r.Window != nil {
		for _, a := range r.Window.Aggregates {
			var e *Expr
			if a.Of != "" {
				e, _ = CompileExpr(a.Of, false)
			}
			aggs = append(aggs, e)
		}
	}
	cs, probs := connectSchema(p, r, exprs, aggs, inputs)
	if r.Format == OutputAvro && len(probs) == 0 {
		probs = avroNameProblems(p, r, cs)
	}
	for _, pr := range probs {
		d.at(pr.path, "%s", pr.msg)
	}
}
