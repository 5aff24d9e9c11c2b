package config

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
)

// typedFields is a FieldSchema with JSON types per top-level field, as
// registry.Fields is for a writer schema.
type typedFields map[string][]string

func (f typedFields) Has(path []string) (bool, bool) {
	if len(path) == 0 {
		return true, false
	}
	_, ok := f[path[0]]
	return ok, false
}

func (f typedFields) Names(path []string) []string {
	if len(path) > 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(f))
}

func (f typedFields) Types(path []string) []string {
	if len(path) != 1 {
		return nil
	}
	return f[path[0]]
}

var _ FieldTyper = typedFields(nil)

// TestWriterSchemaTypes: the types of a writer schema (router validate
// --registry) reach the checks; two inputs typing a field differently
// make a union that passes where one of them admits the operation.
func TestWriterSchemaTypes(t *testing.T) {
	orders := SchemaFields{Fields: typedFields{"id": {"string"}, "amount": {"number"}, "ts": {"integer"}, "customer": {"object"}, "tags": {"object"}}, Name: "the writer schema of input orders"}
	for _, c := range []struct{ when, want string }{
		{`amount > 1000`, ""},
		{`amount > "1000"`, `:12:18: routes[0].when: invalid operation: > (mismatched types number and string) (the inputs' schemas: amount is a number)`},
		{`id * 2 > 1`, `routes[0].when: invalid operation: * (mismatched types string and integer) (the inputs' schemas: id is a string)`},
		{`abs(id) > 1`, `routes[0].when: invalid argument for abs (type string) (the inputs' schemas: id is a string)`},
	} {
		err := loadWithFields(t, fieldsSrc(c.when, "ts"), map[string]SchemaFields{"orders": orders})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.when, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %s", c.when, err, c.want)
		}
	}
	src := strings.Replace(fieldsSrc(`id * 2 > 1`, "ts"), "    format: avro\n", "    format: avro\n  - topic: refunds\n    format: avro\n", 1)
	refunds := SchemaFields{Fields: typedFields{"id": {"integer"}, "ts": {"integer"}, "customer": {"object"}}, Name: "the writer schema of input refunds"}
	if err := loadWithFields(t, src, map[string]SchemaFields{"orders": orders, "refunds": refunds}); err != nil {
		t.Errorf("id is a string or an integer: %v", err)
	}
}

// typeSamples are values of each JSON type as the decoders make them.
var typeSamples = map[string][]any{
	jsonInteger: {0, 3, -7},
	jsonNumber:  {1.5, 2, -0.25},
	jsonString:  {"", "a", "3"},
	jsonBoolean: {true, false},
	jsonArray:   {[]any{}, []any{"a", 1}},
	jsonObject:  {map[string]any{}, map[string]any{"x": 1}},
	jsonNull:    {nil},
}

// oracleOps are operations whose misuse is an error at run time (==
// across types is not: it is false, and the checker refuses it on
// purpose, so the golden files test it).
var oracleOps = []string{
	`x > 1`, `x > "a"`, `x + 1`, `x + "a"`, `x - 1`, `x * 2.5`, `x % 2`, `-x`,
	`len(x)`, `upper(x)`, `abs(x)`, `x matches "a"`, `x startsWith "a"`,
	`x[0]`, `not x`, `x && true`, `x ? 1 : 2`, `x in [1, 2]`, `"a" in x`,
	`keys(x)`, `count(x, # > 1)`, `x..3`, `float(x) > 1`, `x + x`, `x / 2`,
	`x[0:2]`, `x.y`, `x?.y`,
}

// stricter are the operations the check refuses on types the run time
// lets through without meaning: only the types listed may pass.
var stricter = map[string][]string{
	`x && true`:        {jsonBoolean},                       // yields x itself: not true or false
	`x in [1, 2]`:      {jsonInteger, jsonNumber, jsonNull}, // false for other types; nil: the checker lets it be
	`count(x, # > 1)`:  {jsonArray},                         // counts a string's bytes, an empty map's nothing
	`x[0]`:             {jsonArray},                         // a string's byte: expr-lang's checker does not index strings
	`x matches "a"`:    {jsonString},                        // nil: false
	`x startsWith "a"`: {jsonString},                        // nil: false
	`"a" in x`:         {jsonArray, jsonObject},             // nil: false
	`x?.y`:             {jsonObject},                        // nil: nil
}

// TestTypeChecksAgainstRuntime: for every JSON type and every pair of
// types (a union), each operation passes the check exactly when some
// value of those types evaluates without an error at run time (the
// oracle: the untyped program run on sample values).
func TestTypeChecksAgainstRuntime(t *testing.T) {
	types := []string{jsonInteger, jsonNumber, jsonString, jsonBoolean, jsonArray, jsonObject, jsonNull}
	var unions [][]string
	for i, a := range types {
		unions = append(unions, []string{a})
		for _, b := range types[i+1:] {
			unions = append(unions, []string{a, b})
		}
	}
	for _, u := range unions {
		ft := &fieldTypes{types: map[string][]any{"x": exprTypes(u)}, jsonTypes: map[string][]string{"x": u}}
		for _, op := range oracleOps {
			_, err := compileExpr(op, false, ft, nil)
			if got, want := err == nil, runsOnSome(t, op, u); got != want {
				t.Errorf("x of %v, %s: check passes %v, runs on some value %v (%v)", u, op, got, want, err)
			}
		}
	}
}

// runsOnSome reports whether op evaluates without error for some sample
// value of the types ts.
func runsOnSome(t *testing.T, op string, ts []string) bool {
	prog, err := expr.Compile(op, expr.Env(metaEnv), expr.AllowUndefinedVariables())
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	for _, tt := range ts {
		if tt == jsonNull && len(ts) > 1 {
			continue // a union passes on its other types; nil alone is tested alone
		}
		if ok, listed := stricter[op]; listed && !slices.Contains(ok, tt) {
			continue
		}
		for _, v := range typeSamples[tt] {
			if _, err := expr.Run(prog, map[string]any{"x": v}); err == nil {
				return true
			}
		}
	}
	return false
}
