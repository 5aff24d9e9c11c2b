package config

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Type checks of expressions against the inputs' schemas: each record
// field an expression reads is typed as the schemas say (JSON Schema
// files, or the writer schemas of router validate --registry), and
// expr-lang's own checker judges comparisons, arithmetic and function
// arguments. A field of several types (a union, or one typed differently
// by two inputs) passes when some choice of its types compiles: at run
// time each record has one of them. A field of unknown type is any.

// JSON types as JSON Schema names them; the value model (internal/registry
// package doc) decodes every format into these.
const (
	jsonInteger = "integer"
	jsonNumber  = "number"
	jsonString  = "string"
	jsonBoolean = "boolean"
	jsonArray   = "array"
	jsonObject  = "object"
	jsonNull    = "null"
)

// FieldTyper is a FieldSchema that knows the JSON types of its fields
// (registry.Fields does). Types are the JSON types (integer, number,
// string, boolean, array, object, null) the value at path can have, null
// included when it may be absent; nil when unknown.
type FieldTyper interface {
	Types(path []string) []string
}

// fieldLookup is one input's top-level field types: nil, false when the
// input says nothing about the field (any value may be there).
type fieldLookup struct {
	names []string
	types func(name string) ([]string, bool)
}

// withTypes sets the field types of ft (created when nil and some type is
// known) from each input's writer schema when it has types, else its JSON
// Schema file; a field is typed only when every input types it.
func (d *doc) withTypes(ft *fieldTypes, ins []inputSchema) *fieldTypes {
	if len(ins) == 0 {
		return ft
	}
	looks := make([]fieldLookup, 0, len(ins))
	for _, in := range ins {
		looks = append(looks, d.inputLookup(in))
	}
	unions := map[string][]string{}
	for _, l := range looks {
		for _, name := range l.names {
			if _, done := unions[name]; done || IsMeta(name) {
				continue
			}
			var all []string
			known := true
			for _, o := range looks {
				ts, ok := o.types(name)
				if !ok {
					known = false
					break
				}
				all = appendNew(all, ts...)
			}
			if known {
				unions[name] = all
			} else {
				unions[name] = nil
			}
		}
	}
	if ft == nil {
		ft = &fieldTypes{}
	}
	ft.types = map[string][]any{}
	ft.jsonTypes = map[string][]string{}
	for name, ts := range unions {
		if ts == nil {
			continue
		}
		ft.jsonTypes[name] = ts
		ft.types[name] = exprTypes(ts)
	}
	return ft
}

// inputLookup is what in's schemas say about its top-level fields.
func (d *doc) inputLookup(in inputSchema) fieldLookup {
	if sf, ok := d.schemas[in.topic]; ok && sf.Fields != nil {
		typer, ok := sf.Fields.(FieldTyper)
		if !ok {
			return fieldLookup{types: func(string) ([]string, bool) { return nil, false }}
		}
		return fieldLookup{names: sf.Fields.Names(nil), types: func(name string) ([]string, bool) {
			path := []string{name}
			if has, _ := sf.Fields.Has(path); !has {
				return []string{jsonNull}, true
			}
			ts := typer.Types(path)
			return ts, ts != nil
		}}
	}
	s := in.schema
	if s == nil {
		return fieldLookup{types: func(string) ([]string, bool) { return nil, false }}
	}
	for s.Ref != nil && s.Properties == nil {
		s = s.Ref
	}
	closed := false
	if b, ok := s.AdditionalProperties.(bool); ok && !b && len(s.PatternProperties) == 0 {
		closed = true
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	return fieldLookup{names: names, types: func(name string) ([]string, bool) {
		p, ok := s.Properties[name]
		if !ok {
			if closed {
				return []string{jsonNull}, true
			}
			return nil, false
		}
		ts := SchemaJSONTypes(p)
		if ts == nil {
			return nil, false
		}
		if !slices.Contains(s.Required, name) {
			ts = appendNew(ts, jsonNull)
		}
		return ts, true
	}}
}

// SchemaJSONTypes are the JSON types a JSON Schema admits, from its type
// keyword, or its enum or const values; nil when it does not say (no
// type, a combinator).
func SchemaJSONTypes(s *jsonschema.Schema) []string {
	for s.Types == nil && s.Ref != nil && s.Enum == nil && s.Const == nil {
		s = s.Ref
	}
	if s.Types != nil {
		return s.Types.ToStrings()
	}
	var vals []any
	switch {
	case s.Enum != nil:
		vals = s.Enum.Values
	case s.Const != nil:
		vals = []any{*s.Const}
	default:
		return nil
	}
	var ts []string
	for _, v := range vals {
		switch v.(type) {
		case nil:
			ts = appendNew(ts, jsonNull)
		case string:
			ts = appendNew(ts, jsonString)
		case bool:
			ts = appendNew(ts, jsonBoolean)
		default:
			return nil // numbers: integer or not by value; let them be
		}
	}
	return ts
}

func appendNew(to []string, ts ...string) []string {
	for _, t := range ts {
		if !slices.Contains(to, t) {
			to = append(to, t)
		}
	}
	return to
}

// exprTypes are the zero values the checker types a field of JSON types
// ts with, one per choice: a number decodes as an int or a float64 by
// value. Null counts only alone: every operation null admits (== nil,
// ??) the other types admit too, and one null cannot pass (nil > 1).
func exprTypes(ts []string) []any {
	var out []any
	add := func(v any) {
		for _, o := range out {
			if fmt.Sprintf("%T", o) == fmt.Sprintf("%T", v) {
				return
			}
		}
		out = append(out, v)
	}
	for _, t := range ts {
		switch t {
		case jsonNumber:
			add(float64(0))
			add(0)
		case jsonInteger:
			add(0)
		case jsonString:
			add("")
		case jsonBoolean:
			add(false)
		case jsonArray:
			add([]any{})
		case jsonObject:
			add(map[string]any{})
		}
	}
	if len(out) == 0 && slices.Contains(ts, jsonNull) {
		out = append(out, nil)
	}
	return out
}

// maxTypeChoices bounds the compilations of one expression: the fields
// whose types would take it past this are checked as any.
const maxTypeChoices = 64

// typeCheck compiles src with the record fields it reads (fields, sorted)
// typed as the schemas say, once per choice of types of the fields that
// have several, until one compiles. It returns the error of the first
// choice (each field its first type) when none does.
//
// A bare field as a predicate is left to strictCheck, which says so in
// its own words.
func typeCheck(src string, asBool, bare bool, ft *fieldTypes, fns Functions, fields []string) *ExprError {
	if ft == nil || len(ft.types) == 0 {
		return nil
	}
	var typed []string
	choices := 1
	for _, f := range fields {
		ts := ft.types[f]
		if len(ts) == 0 || IsMeta(f) || choices*len(ts) > maxTypeChoices {
			continue
		}
		typed = append(typed, f)
		choices *= len(ts)
	}
	if len(typed) == 0 {
		return nil
	}
	var first error
	pick := make([]int, len(typed))
	for range choices {
		env := make(map[string]any, len(metaEnv)+len(typed))
		for i, f := range typed {
			env[f] = ft.types[f][pick[i]]
		}
		for k, v := range metaEnv {
			env[k] = v
		}
		opts := append([]expr.Option{expr.Env(env), expr.AllowUndefinedVariables(), expr.MaxNodes(10000)}, fns.options()...)
		if asBool {
			opts = append(opts, expr.AsBool())
		}
		_, err := expr.Compile(src, opts...)
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
		for i := range pick { // the next choice, odometer-wise
			if pick[i]++; pick[i] < len(ft.types[typed[i]]) {
				break
			}
			pick[i] = 0
		}
	}
	ee := exprErr(first)
	if m := notBoolRe.FindStringSubmatch(ee.Msg); asBool && m != nil {
		if bare {
			return nil
		}
		ee.Msg = fmt.Sprintf("a predicate must be true or false, but this expression yields %s", typeName(m[1]))
	}
	ee.Msg = goTypesRe.ReplaceAllStringFunc(ee.Msg, func(t string) string { return goTypeNames[t] })
	said := make([]string, 0, len(typed))
	for _, f := range typed {
		said = append(said, fmt.Sprintf("%s is %s", f, ft.typeWords(f)))
	}
	ee.Msg = strings.TrimSpace(ee.Msg) + " (the inputs' schemas: " + strings.Join(said, "; ") + ")"
	return ee
}

// goTypesRe matches the Go types expr-lang's messages name.
var goTypesRe = regexp.MustCompile(`map\[string\]interface \{\}|\[\]interface \{\}|interface \{\}|\bfloat64\b|\bint\b|\bbool\b`)

var goTypeNames = map[string]string{
	"map[string]interface {}": "object",
	"[]interface {}":          "array",
	"interface {}":            "any",
	"float64":                 "number",
	"int":                     "integer",
	"bool":                    "boolean",
}

// typeWords says a field's JSON types: "a number", "a string or null".
func (ft *fieldTypes) typeWords(f string) string {
	ts := ft.jsonTypes[f]
	if slices.Contains(ts, jsonNumber) {
		ts = slices.DeleteFunc(slices.Clone(ts), func(t string) bool { return t == jsonInteger })
	}
	words := make([]string, 0, len(ts))
	for _, t := range ts {
		if t != jsonNull {
			words = append(words, "a"+article(t)+" "+t)
		}
	}
	if slices.Contains(ts, jsonNull) {
		words = append(words, jsonNull)
	}
	return strings.Join(words, " or ")
}
