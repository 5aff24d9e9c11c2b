// Package exprbench is the expression-language benchmark (tests only).
package exprbench

// The expression-language benchmark behind docs/benchmarks.md ("Expression language"):
// expr-lang/expr (what the router uses) against CEL (cel.dev/cel-go) on
// the router's own predicates and key. CEL is imported here only, in the
// bench module (bench/go.mod), so it is no requirement of the router's.
//
//	cd bench && go test ./expr -run '^$' -bench Expr -benchmem -count 5
//
// Two modes per case:
//   - eval: the record's activation map already exists; this is the
//     language's own cost.
//   - record: the activation is built per record from the decoded fields,
//     as processor's env() does (5 fields + 7 metadata entries), then one
//     evaluation; this is what one route evaluation costs the router.
//
// Engines:
//   - expr: expr.Run (a new VM per call).
//   - expr_vm: one vm.VM reused across records, as the router does.
//   - cel: Program.Eval on the same map; Eval wraps it in an activation.

import (
	"slices"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sidestream/sidestream/internal/config"
)

type exprCase struct {
	name   string
	expr   string // expr-lang source, as a user writes it today
	cel    string // the same in CEL
	asBool bool
}

var exprCases = []exprCase{
	{"level_eq", `level == "ERROR"`, `level == "ERROR"`, true},
	// CEL compares a double with an int literal at run time (the
	// variables are dyn, as record fields are); the literal stays an int
	// in both languages.
	{"warn_and_latency", `level == "WARN" && latency_ms > 250`, `level == "WARN" && latency_ms > 250`, true},
	{"key_concat", `service + ":" + string(user_id)`, `service + ":" + string(user_id)`, false},
}

// benchRecords are decoded fields as the decoder yields them (JSON
// numbers are float64 there; user_id is int64 here because CEL's
// string(double) would print "42.0", not the "42" a key wants). Several
// records so branches are not all taken the same way.
var benchRecords = []map[string]any{
	{"level": "ERROR", "service": "api", "user_id": int64(42), "latency_ms": 12.5, "id": "r1"},
	{"level": "WARN", "service": "billing", "user_id": int64(7), "latency_ms": 300.0, "id": "r2"},
	{"level": "INFO", "service": "api", "user_id": int64(1001), "latency_ms": 80.0, "id": "r3"},
	{"level": "WARN", "service": "search", "user_id": int64(3), "latency_ms": 120.0, "id": "r4"},
}

// benchEnv builds one record's activation the way processor's env() does.
func benchEnv(fields map[string]any) map[string]any {
	e := make(map[string]any, len(fields)+7)
	for k, v := range fields {
		e[k] = v
	}
	e[config.MetaKey] = "key-1"
	e[config.MetaTopic] = "logs"
	e[config.MetaPartition] = 3
	e[config.MetaOffset] = 12345
	e[config.MetaTimestamp] = 1700000000000
	e[config.MetaEventTime] = 1700000000000
	e[config.MetaHeaders] = map[string]string{}
	return e
}

// celEnv declares every field the benchmark records carry, and the
// metadata, as dyn: like expr's AllowUndefinedVariables, types are known
// only at run time.
func celEnv(tb testing.TB) *cel.Env {
	tb.Helper()
	var opts []cel.EnvOption
	for k := range benchRecords[0] {
		opts = append(opts, cel.Variable(k, cel.DynType))
	}
	for _, m := range []string{config.MetaKey, config.MetaTopic, config.MetaPartition, config.MetaOffset, config.MetaTimestamp, config.MetaEventTime, config.MetaHeaders} {
		opts = append(opts, cel.Variable(m, cel.DynType))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return env
}

func celProgram(tb testing.TB, env *cel.Env, src string) cel.Program {
	tb.Helper()
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		tb.Fatalf("cel compile %q: %v", src, iss.Err())
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		tb.Fatal(err)
	}
	return prg
}

// celNative turns a CEL result into the Go value the router needs.
func celNative(v any) any {
	switch v := v.(type) {
	case types.Bool:
		return bool(v)
	case types.String:
		return string(v)
	}
	return v
}

// TestExprBenchAgree checks that both languages compute the same results
// on the benchmark records, so the benchmark compares like with like.
func TestExprBenchAgree(t *testing.T) {
	env := celEnv(t)
	for _, c := range exprCases {
		e, err := config.CompileExpr(c.expr, c.asBool)
		if err != nil {
			t.Fatal(err)
		}
		prg := celProgram(t, env, c.cel)
		for _, r := range benchRecords {
			act := benchEnv(r)
			want, err := expr.Run(e.Program, act)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := prg.Eval(act)
			if err != nil {
				t.Fatalf("cel %q on %v: %v", c.cel, r, err)
			}
			if celNative(got) != want {
				t.Errorf("%s on %v: cel %v, expr %v", c.name, r, got, want)
			}
		}
	}
}

var sink any

// benchFields numbers the benchmark records' fields for Fast.
var benchFields = []string{"id", "latency_ms", "level", "service", "user_id"}

// benchFast is e's fast form and each benchmark record's fields by
// number, checked against the VM on every record.
func benchFast(tb testing.TB, e *config.Expr, asBool bool) (config.Fast, [][]any) {
	fast := config.CompileFast(e.Program, asBool, func(name string) (int, bool) {
		i := slices.Index(benchFields, name)
		return i, i >= 0
	})
	vars := make([][]any, len(benchRecords))
	for i, r := range benchRecords {
		for _, f := range benchFields {
			vars[i] = append(vars[i], r[f])
		}
		if fast == nil {
			continue
		}
		want, err := expr.Run(e.Program, benchEnv(r))
		if got, ok := fast(vars[i]); ok && (err != nil || got != want) {
			tb.Fatalf("%s on %v: Fast %v, VM %v (%v)", e.Source, r, got, want, err)
		}
	}
	return fast, vars
}

func BenchmarkExpr(b *testing.B) {
	celE := celEnv(b)
	prebuilt := make([]map[string]any, len(benchRecords))
	for i, r := range benchRecords {
		prebuilt[i] = benchEnv(r)
	}
	n := len(benchRecords)
	for _, c := range exprCases {
		e, err := config.CompileExpr(c.expr, c.asBool)
		if err != nil {
			b.Fatal(err)
		}
		prg := celProgram(b, celE, c.cel)

		b.Run(c.name+"/eval/expr", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				out, err := expr.Run(e.Program, prebuilt[i%n])
				if err != nil {
					b.Fatal(err)
				}
				sink = out
			}
		})
		b.Run(c.name+"/eval/expr_vm", func(b *testing.B) {
			var m vm.VM
			for i := 0; b.Loop(); i++ {
				out, err := m.Run(e.Program, prebuilt[i%n])
				if err != nil {
					b.Fatal(err)
				}
				sink = out
			}
		})
		b.Run(c.name+"/eval/fast", func(b *testing.B) {
			fast, vars := benchFast(b, e, c.asBool)
			if fast == nil {
				b.Skip("not a shape Fast covers")
			}
			for i := 0; b.Loop(); i++ {
				out, ok := fast(vars[i%n])
				if !ok {
					b.Fatal("Fast did not decide")
				}
				sink = out
			}
		})
		b.Run(c.name+"/eval/cel", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				out, _, err := prg.Eval(prebuilt[i%n])
				if err != nil {
					b.Fatal(err)
				}
				sink = celNative(out)
			}
		})
		b.Run(c.name+"/record/expr_vm", func(b *testing.B) {
			var m vm.VM
			for i := 0; b.Loop(); i++ {
				out, err := m.Run(e.Program, benchEnv(benchRecords[i%n]))
				if err != nil {
					b.Fatal(err)
				}
				sink = out
			}
		})
		b.Run(c.name+"/record/cel", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				out, _, err := prg.Eval(benchEnv(benchRecords[i%n]))
				if err != nil {
					b.Fatal(err)
				}
				sink = celNative(out)
			}
		})
	}
}
