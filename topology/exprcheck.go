package topology

import (
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Strict expression checks, beyond what expr-lang's compiler catches when
// record fields are typed as any: a call of a function that does not
// exist, a predicate that is a bare field (a string or number would send
// every record to dirty), and, with JSON Schemas on the inputs, field
// types and fields the schemas cannot have.

// fieldTypes is what the inputs' JSON Schemas say about record fields:
// the expr type of each field every schema types alike (string and
// boolean only: numbers decode as int or float64 by value), and, when
// every schema is closed (additionalProperties: false), the fields that
// may exist at all.
type fieldTypes struct {
	types    map[string]any    // field -> zero value of its type
	jsonType map[string]string // field -> JSON Schema type, for messages
	allowed  map[string]bool   // nil: any field may exist
}

// newFieldTypes derives the field types of the inputs; nil when some
// input has no schema.
func newFieldTypes(ins []inputSchema) *fieldTypes {
	if len(ins) == 0 {
		return nil
	}
	ft := &fieldTypes{types: map[string]any{}, jsonType: map[string]string{}}
	closed := true
	var allowed, required map[string]bool
	for i, in := range ins {
		s := in.schema
		if s == nil {
			return nil
		}
		for s.Ref != nil && s.Properties == nil {
			s = s.Ref
		}
		props := map[string]bool{}
		req := map[string]bool{}
		for _, name := range s.Required {
			req[name] = true
		}
		if i == 0 {
			required = req
		} else {
			for name := range required {
				if !req[name] {
					delete(required, name)
				}
			}
		}
		for name, p := range s.Properties {
			props[name] = true
			t := propJSONType(p)
			if i == 0 {
				ft.jsonType[name] = t
			} else if ft.jsonType[name] != t {
				ft.jsonType[name] = ""
			}
		}
		for name := range ft.jsonType {
			if !props[name] {
				ft.jsonType[name] = ""
			}
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
	// Only fields every schema requires are typed: an optional one may be
	// missing (nil), and level == "X" on it is false, not an error. The
	// types serve the check only; the programs that run are compiled
	// untyped (CompileExpr).
	for name, t := range ft.jsonType {
		if !required[name] {
			continue
		}
		switch t {
		case "string":
			ft.types[name] = ""
		case "boolean":
			ft.types[name] = false
		}
	}
	if closed {
		ft.allowed = allowed
	}
	return ft
}

// propJSONType is a property's single non-null JSON type ("" when it has
// several, or none the schema states), typing a string or boolean enum by
// its values.
func propJSONType(s *jsonschema.Schema) string {
	for s.Types == nil && s.Ref != nil {
		s = s.Ref
	}
	if s.Types == nil {
		switch t, _ := enumConnectType(s); t {
		case ConnectString:
			return "string"
		case ConnectBoolean:
			return "boolean"
		}
		return ""
	}
	var ts []string
	for _, t := range s.Types.ToStrings() {
		if t != "null" {
			ts = append(ts, t)
		}
	}
	if len(ts) == 1 && len(s.Types.ToStrings()) == 1 {
		return ts[0]
	}
	return ""
}

// env is the compiler's environment: the metadata and the typed fields.
func (ft *fieldTypes) env() map[string]any {
	env := make(map[string]any, len(metaEnv)+len(ft.typesOrNil()))
	for k, v := range ft.typesOrNil() {
		env[k] = v
	}
	for k, v := range metaEnv {
		env[k] = v
	}
	return env
}

func (ft *fieldTypes) typesOrNil() map[string]any {
	if ft == nil {
		return nil
	}
	return ft.types
}

// strictCollector finds, with their places, the calls of names that are
// not functions and the fields an expression reads.
type strictCollector struct {
	calls  []*ast.IdentifierNode
	fields map[string]*ast.IdentifierNode // first use
	bound  map[string]bool
}

func (c *strictCollector) Visit(n *ast.Node) {
	switch v := (*n).(type) {
	case *ast.CallNode:
		if id, ok := v.Callee.(*ast.IdentifierNode); ok {
			c.calls = append(c.calls, id)
		}
	case *ast.VariableDeclaratorNode:
		c.bound[v.Name] = true
	case *ast.IdentifierNode:
		if _, seen := c.fields[v.Value]; !seen && v.Value != "$env" && !IsMeta(v.Value) {
			c.fields[v.Value] = v
		}
	}
}

// strictCheck runs the checks the compiler does not make on tree (parsed
// from src); asBool for predicates.
func strictCheck(src string, tree *ast.Node, asBool bool, ft *fieldTypes) *ExprError {
	c := &strictCollector{fields: map[string]*ast.IdentifierNode{}, bound: map[string]bool{}}
	ast.Walk(tree, c)
	for _, id := range c.calls {
		if _, ok := builtin.Index[id.Value]; ok || c.bound[id.Value] {
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
	// A bare field as a predicate is refused when the schemas say it is
	// not a boolean (a required one is typed, and the compiler already
	// said so); of unknown type it may well be a JSON boolean.
	if asBool {
		if id := bareField(*tree); id != nil && !c.bound[id.Value] {
			if t := ft.fieldJSONType(id.Value); t != "" && t != "boolean" {
				return exprErrAt(src, id.Location(), fmt.Sprintf("a predicate must be true or false, but %s is a%s %s field (input JSON Schema): compare it, e.g. %s == ...", id.Value, article(t), t, id.Value))
			}
		}
	}
	return nil
}

func (ft *fieldTypes) fieldJSONType(name string) string {
	if ft == nil {
		return ""
	}
	return ft.jsonType[name]
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
