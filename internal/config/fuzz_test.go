package config

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
)

// FuzzLoad feeds arbitrary bytes to Load. It must never panic and must
// return exactly one of a config and an error; an error is a *ConfigError
// whose every line has the FILE:LINE:COL: message shape. A config that
// loads must compile and describe: Load is the only gate before the
// runtime. Seeds are the good and bad configs of testdata; crashers found
// once live in testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/good/*.yaml", "testdata/bad/*.bad.yaml", "../../examples/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	// The name puts relative schema paths in testdata/good, where the
	// seeds' schemas are.
	const name = "testdata/good/fuzz.yaml"
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := Load(name, b)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Load = %v, %v: want exactly one of them", cfg, err)
		}
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error %T %q is not a *ConfigError with problems", err, err)
			}
			for _, p := range ce.Problems {
				if p.File != name || p.Pos.Line < 1 || p.Pos.Col < 1 || p.Msg == "" || strings.ContainsAny(p.Msg, "\n\r") {
					t.Fatalf("malformed problem %#v", p)
				}
			}
			return
		}
		top, err := Compile(cfg, dirOf(name))
		if err != nil {
			t.Fatalf("loaded config does not compile: %v", err)
		}
		for _, format := range DescribeFormats {
			if _, err := top.Describe(format); err != nil {
				t.Fatalf("Describe(%s): %v", format, err)
			}
		}
	})
}

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
