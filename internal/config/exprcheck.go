package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
)

// Strict expression checks, beyond what expr-lang's compiler catches when
// record fields are typed as any: a call of a function that does not
// exist, a predicate that is a bare field (a string or number would send
// every record to dirty), and, with JSON Schemas on the inputs, field
// types and fields the schemas cannot have.

// fieldTypes is what the inputs' schemas say about record fields: the
// types of each field every input types (exprtypes.go), and, when every
// JSON Schema is closed (additionalProperties: false), the fields that
// may exist at all.
type fieldTypes struct {
	types     map[string][]any    // field -> zero values of its expr types, one per choice
	jsonTypes map[string][]string // field -> its JSON types, for messages
	allowed   map[string]bool     // nil: any field may exist
	// known: per input, the fields its records can have, when writer
	// schemas were given (withSchemaFields); nil otherwise.
	known []knownFields
}

// newFieldTypes derives the fields the inputs' JSON Schemas allow; nil
// when some input has no schema.
func newFieldTypes(ins []inputSchema) *fieldTypes {
	if len(ins) == 0 {
		return nil
	}
	ft := &fieldTypes{}
	closed := true
	var allowed map[string]bool
	for _, in := range ins {
		s := in.schema
		if s == nil {
			return nil
		}
		for s.Ref != nil && s.Properties == nil {
			s = s.Ref
		}
		props := map[string]bool{}
		for name := range s.Properties {
			props[name] = true
		}
		if b, ok := s.AdditionalProperties.(bool); !ok || b || len(s.PatternProperties) > 0 {
			closed = false
		}
		if allowed == nil {
			allowed = props
		} else {
			for k := range props {
				allowed[k] = true
			}
		}
	}
	if closed {
		ft.allowed = allowed
	}
	return ft
}

func (ft *fieldTypes) typesOrNil() map[string][]any {
	if ft == nil {
		return nil
	}
	return ft.types
}

// strictCollector finds, with their places, the calls of names that are
// not functions and the fields an expression reads.
type strictCollector struct {
	calls   []*ast.IdentifierNode
	fields  map[string]*ast.IdentifierNode // first use
	members []memberPath                   // constant member reads (a.b, $env.b)
	bound   map[string]bool
}

func (c *strictCollector) Visit(n *ast.Node) {
	switch v := (*n).(type) {
	case *ast.CallNode:
		if id, ok := v.Callee.(*ast.IdentifierNode); ok {
			c.calls = append(c.calls, id)
		}
	case *ast.VariableDeclaratorNode:
		c.bound[v.Name] = true
	case *ast.MemberNode:
		if p, ok := memberOf(v); ok && len(p.segs) > 0 {
			c.members = append(c.members, p)
		}
	case *ast.IdentifierNode:
		if _, seen := c.fields[v.Value]; !seen && v.Value != "$env" && !IsMeta(v.Value) {
			c.fields[v.Value] = v
		}
	}
}

// strictCheck runs the checks the compiler does not make on tree (parsed
// from src); asBool for predicates.
func strictCheck(src string, tree *ast.Node, asBool bool, ft *fieldTypes, fns Functions) *ExprError {
	c := &strictCollector{fields: map[string]*ast.IdentifierNode{}, bound: map[string]bool{}}
	ast.Walk(tree, c)
	for _, id := range c.calls {
		if _, ok := builtin.Index[id.Value]; ok || c.bound[id.Value] || fns.has(id.Value) {
			continue
		}
		if _, ok := ft.typesOrNil()[id.Value]; ok {
			continue // a field's value is not callable: the compiler says so
		}
		msg := fmt.Sprintf("unknown function %s", id.Value)
		if near := nearest(id.Value, builtin.Names, 2); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		return exprErrAt(src, id.Location(), msg)
	}
	callees := map[string]bool{}
	for _, id := range c.calls {
		callees[id.Value] = true
	}
	if ft != nil && ft.allowed != nil {
		names := make([]string, 0, len(c.fields))
		for n := range c.fields {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if ft.allowed[n] || c.bound[n] || callees[n] {
				continue
			}
			if _, ok := builtin.Index[n]; ok {
				continue
			}
			props := make([]string, 0, len(ft.allowed))
			for p := range ft.allowed {
				props = append(props, p)
			}
			sort.Strings(props)
			msg := fmt.Sprintf("field %s cannot be in a record: the input's JSON Schema allows only %s (additionalProperties: false)", n, strings.Join(props, ", "))
			if near := nearest(n, props, 2); near != "" {
				msg = fmt.Sprintf("field %s cannot be in a record (did you mean %s?): the input's JSON Schema allows only %s (additionalProperties: false)", n, near, strings.Join(props, ", "))
			}
			return exprErrAt(src, c.fields[n].Location(), msg)
		}
	}
	if ee := ft.checkKnown(src, c, callees); ee != nil {
		return ee
	}
	// A bare field as a predicate is refused when the schemas say it is
	// not a boolean (a required one is typed, and the compiler already
	// said so); of unknown type it may well be a JSON boolean.
	if asBool {
		if id := bareField(*tree); id != nil && !c.bound[id.Value] {
			if t := ft.fieldJSONType(id.Value); t != "" && t != "boolean" {
				return exprErrAt(src, id.Location(), fmt.Sprintf("a predicate must be true or false, but %s is a%s %s field (the input's schema): compare it, e.g. %s == ...", id.Value, article(t), t, id.Value))
			}
		}
	}
	return nil
}

// fieldJSONType is the field's one JSON type besides null (number for
// integer and number together); "" when it has several or none is known.
func (ft *fieldTypes) fieldJSONType(name string) string {
	if ft == nil {
		return ""
	}
	ts := slices.DeleteFunc(slices.Clone(ft.jsonTypes[name]), func(t string) bool { return t == jsonNull })
	if slices.Contains(ts, jsonNumber) {
		ts = slices.DeleteFunc(ts, func(t string) bool { return t == jsonInteger })
	}
	if len(ts) != 1 {
		return ""
	}
	return ts[0]
}

// bareField returns the field identifier when the whole expression is
// one field read (level, not level == "X").
func bareField(n ast.Node) *ast.IdentifierNode {
	if id, ok := n.(*ast.IdentifierNode); ok && id.Value != "$env" && !IsMeta(id.Value) {
		if _, isBuiltin := builtin.Index[id.Value]; !isBuiltin {
			return id
		}
	}
	return nil
}

// exprErrAt is an ExprError at a node's place in src.
func exprErrAt(src string, loc file.Location, msg string) *ExprError {
	line, col := 1, 1
	for i, r := range []rune(src) {
		if i >= loc.From {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &ExprError{Line: line, Col: col, Msg: msg}
}

// nearest is the candidate within max edits of s, "" when none.
func nearest(s string, candidates []string, max int) string {
	best, bestD := "", max+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "n"
	}
	return ""
}

// FieldSchema is what a writer schema says about the records of one
// input: the fields they can have (registry.Fields satisfies it). A path
// is one field name per segment.
type FieldSchema interface {
	// Has reports whether a record can hold the field at path, and
	// whether anything below it may be there too (open: a map, an
	// array, an open object).
	Has(path []string) (has, open bool)
	// Names are the field names directly under path (nil: the top
	// level), sorted; none where the path is open or not there.
	Names(path []string) []string
}

// SchemaFields is an input's writer schema as LoadFileWithFields takes
// it: its fields and how a message names it ("the writer schema of input
// orders (subject orders-value, version 3)"), or why there is none.
type SchemaFields struct {
	Fields FieldSchema
	Name   string
	// Problem, when set, says why the input has no writer schema (its
	// subject is not in the registry, it does not compile): a problem at
	// the input's topic.
	Problem string
}

// knownFields is one input's fields for the checks: nil Fields when any
// field may exist (no schema, or an open one).
type knownFields struct {
	topic string
	SchemaFields
}

// closedJSON is a closed JSON Schema file's top-level properties (the
// check the file schemas always had: nested fields are not restricted).
type closedJSON map[string]bool

func (c closedJSON) Has(path []string) (bool, bool) {
	if len(path) == 0 {
		return true, false
	}
	return c[path[0]], len(path) > 1 && c[path[0]]
}

func (c closedJSON) Names(path []string) []string {
	if len(path) > 0 {
		return nil
	}
	names := make([]string, 0, len(c))
	for k := range c {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// withSchemaFields adds to ft, when writer schemas were given (router
// validate --registry), the fields each input can have: its writer
// schema's, a closed JSON Schema file's properties, or any (nil). Without
// writer schemas ft is as the JSON Schema files alone make it.
func (d *doc) withSchemaFields(ft *fieldTypes, ins []inputSchema) *fieldTypes {
	if len(d.schemas) == 0 {
		return ft
	}
	if ft == nil {
		ft = &fieldTypes{}
	}
	ft.known = make([]knownFields, 0, len(ins))
	for i, in := range ins {
		if sf := d.schemas[in.topic]; sf.Problem != "" {
			d.at(fmt.Sprintf("inputs[%d].topic", i), "inputs[%d]: %s", i, sf.Problem)
		}
		k := knownFields{topic: in.topic}
		if sf, ok := d.schemas[in.topic]; ok && sf.Fields != nil {
			k.SchemaFields = sf
		} else if s := in.schema; s != nil {
			for s.Ref != nil && s.Properties == nil {
				s = s.Ref
			}
			if b, ok := s.AdditionalProperties.(bool); ok && !b && len(s.PatternProperties) == 0 {
				props := closedJSON{}
				for name := range s.Properties {
					props[name] = true
				}
				k.SchemaFields = SchemaFields{Fields: props, Name: fmt.Sprintf("the JSON Schema of input %s (additionalProperties: false)", in.topic)}
			}
		}
		ft.known = append(ft.known, k)
	}
	return ft
}

// cannotHave reports whether no input's record can hold the field at
// path: every input has a schema that restricts it, and none has it.
func (ft *fieldTypes) cannotHave(path []string) bool {
	if ft == nil || len(ft.known) == 0 {
		return false
	}
	for _, k := range ft.known {
		if k.Fields == nil {
			return false
		}
		if has, _ := k.Fields.Has(path); has {
			return false
		}
	}
	return true
}

// maxListed bounds the field names a message lists per schema.
const maxListed = 30

// unknownFieldMsg says that no input can have the field at path, with the
// nearest name there and what each schema has at that level.
func (ft *fieldTypes) unknownFieldMsg(path []string) string {
	parent, last := path[:len(path)-1], path[len(path)-1]
	dotted := strings.Join(path, ".")
	var all, has []string
	for _, k := range ft.known {
		names := k.Fields.Names(parent)
		all = append(all, names...)
		where := k.Name
		if len(parent) > 0 {
			where = strings.Join(parent, ".") + " in " + where
		}
		list := names
		if len(list) > maxListed {
			list = append(list[:maxListed:maxListed], fmt.Sprintf("and %d more", len(names)-maxListed))
		}
		if len(list) == 0 {
			has = append(has, fmt.Sprintf("%s has no fields below it", where))
		} else {
			has = append(has, fmt.Sprintf("%s has only %s", where, strings.Join(list, ", ")))
		}
	}
	msg := "field " + dotted + " cannot be in a record"
	if near := nearest(last, all, 2); near != "" {
		msg += " (did you mean " + strings.Join(append(parent[:len(parent):len(parent)], near), ".") + "?)"
	}
	return msg + ": " + strings.Join(has, "; ")
}

// checkKnown checks the fields an expression reads, nested member reads
// included (customer.name), against the inputs' schemas: the first one no
// input can have is an error at its name.
func (ft *fieldTypes) checkKnown(src string, c *strictCollector, callees map[string]bool) *ExprError {
	if ft == nil || len(ft.known) == 0 {
		return nil
	}
	names := make([]string, 0, len(c.fields))
	for n := range c.fields {
		names = append(names, n)
	}
	sort.Strings(names)
	paths := make([]memberPath, 0, len(names)+len(c.members))
	for _, n := range names {
		paths = append(paths, memberPath{segs: []string{n}, locs: []file.Location{c.fields[n].Location()}})
	}
	paths = append(paths, c.members...)
	for _, p := range paths {
		if root := p.segs[0]; c.bound[root] || callees[root] || IsMeta(root) {
			continue
		} else if _, ok := builtin.Index[root]; ok && len(p.segs) == 1 {
			continue
		}
		for i := 1; i <= len(p.segs); i++ {
			if ft.cannotHave(p.segs[:i]) {
				return exprErrAt(src, p.locs[i-1], ft.unknownFieldMsg(p.segs[:i]))
			}
		}
	}
	return nil
}

// memberPath is a field read through constant member accesses (a.b,
// a["b"], $env.b), with the place of each name.
type memberPath struct {
	segs []string
	locs []file.Location
}

// memberOf is the field path a member access reads; false when it is not
// a chain of constant names from a record field.
func memberOf(n ast.Node) (memberPath, bool) {
	switch v := n.(type) {
	case *ast.IdentifierNode:
		if v.Value == "$env" {
			return memberPath{}, true
		}
		return memberPath{segs: []string{v.Value}, locs: []file.Location{v.Location()}}, true
	case *ast.ChainNode:
		return memberOf(v.Node)
	case *ast.MemberNode:
		s, ok := v.Property.(*ast.StringNode)
		if !ok || v.Method {
			return memberPath{}, false
		}
		p, ok := memberOf(v.Node)
		if !ok {
			return memberPath{}, false
		}
		return memberPath{segs: append(p.segs[:len(p.segs):len(p.segs)], s.Value), locs: append(p.locs[:len(p.locs):len(p.locs)], s.Location())}, true
	}
	return memberPath{}, false
}

// checkEventTimeField checks event_time.field (a dotted path, or one
// name holding dots) against the inputs' writer schemas.
func (d *doc) checkEventTimeField() {
	et := d.cfg.EventTime
	if et.Format == TimeKafka || et.Field == "" || d.fields == nil || len(d.fields.known) == 0 {
		return
	}
	path := strings.Split(et.Field, ".")
	if len(path) > 1 && !d.fields.cannotHave([]string{et.Field}) {
		return // one field whose name holds the dots
	}
	for i := 1; i <= len(path); i++ {
		if d.fields.cannotHave(path[:i]) {
			d.at("event_time.field", "event_time.field: %s", d.fields.unknownFieldMsg(path[:i]))
			return
		}
	}
}
