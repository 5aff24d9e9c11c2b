package config

import (
	"errors"
	"sort"
	"testing"

	"github.com/expr-lang/expr"
)

// FuzzCompileExpr compiles arbitrary expressions and runs the ones that
// compile against a record env as the router builds it. Neither may
// panic: the router compiles user expressions at start and runs them on
// every record. Fields must be sorted, unique and hold no metadata.
func FuzzCompileExpr(f *testing.F) {
	for _, s := range []string{
		`level == "ERROR"`,
		`level == "WARN" && latency_ms > 250`,
		`service + ":" + string(user_id)`,
		`let x = lower(level); x in ["warn", "error"]`,
		`any(tags, # startsWith "a") || user.name matches "^b"`,
		`$env["@timestamp"] > _timestamp - 1000 && _headers["x"] != ""`,
		`_key ?? "none"`,
		`map(items, .price * 1.19)`,
		"a ==\n",
		`type == "x"`,
		`$env[k]`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	env := map[string]any{
		"level": "WARN", "latency_ms": 300.0, "service": "api", "user_id": 42.0,
		"tags": []any{"a", "b"}, "items": []any{map[string]any{"price": 2.0}}, "user": map[string]any{"name": "bo"},
		MetaKey: "k", MetaTopic: "t", MetaPartition: 1, MetaOffset: 2, MetaTimestamp: 3, MetaEventTime: 4,
		MetaHeaders: map[string]string{"x": "y"},
	}
	f.Fuzz(func(t *testing.T, src string, asBool bool) {
		e, err := CompileExpr(src, asBool)
		if err != nil {
			var ee *ExprError
			if !errors.As(err, &ee) || ee.Msg == "" {
				t.Fatalf("error %T %q is not an *ExprError with a message", err, err)
			}
			return
		}
		if !sort.StringsAreSorted(e.Fields) {
			t.Fatalf("Fields %q not sorted", e.Fields)
		}
		for i, name := range e.Fields {
			if IsMeta(name) || (i > 0 && e.Fields[i-1] == name) {
				t.Fatalf("Fields %q hold metadata or a duplicate", e.Fields)
			}
		}
		// Run errors are fine (they send a record to dirty); panics are not.
		out, err := expr.Run(e.Program, env)
		if asBool && err == nil && out != nil {
			if _, ok := out.(bool); !ok {
				t.Fatalf("predicate %q returned %T", src, out)
			}
		}
	})
}
