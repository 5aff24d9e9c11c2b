package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/expr-lang/expr/vm"
	"pgregory.net/rapid"
)

// fastFields are the variables of the property test; "@t" is read as
// $env["@t"].
var fastFields = []string{"a", "b", "c", "@t"}

func fastSlot(name string) (int, bool) {
	for i, f := range fastFields {
		if f == name {
			return i, true
		}
	}
	return 0, false
}

// fastValue draws a record field as the decoder gives it: absent or
// null, bool, exact int (beyond 2^53 too), float64, string, or a nested
// object or array.
func fastValue(t *rapid.T, label string) (any, bool) {
	switch rapid.IntRange(0, 8).Draw(t, label+"-kind") {
	case 0:
		return nil, false // absent
	case 1:
		return nil, true
	case 2:
		return rapid.Bool().Draw(t, label), true
	case 3:
		return rapid.SampledFrom([]int{0, 1, -1, 2, 250, 9007199254740993, math.MaxInt64, math.MinInt64}).Draw(t, label), true
	case 4:
		return rapid.SampledFrom([]float64{0, 1, 1.5, -2.25, 250, 9007199254740992, 1e300}).Draw(t, label), true
	case 5, 6:
		return rapid.SampledFrom([]string{"", "ERROR", "WARN", "1", "a b", "é"}).Draw(t, label), true
	case 7:
		return map[string]any{"k": 1}, true
	}
	return []any{1, "s"}, true
}

var fastLiterals = []string{`"ERROR"`, `"WARN"`, `""`, `"1"`, `0`, `1`, `-1`, `250`, `9007199254740993`,
	`9223372036854775807`, `1.5`, `250.0`, `true`, `false`, `nil`}

// fastExprGen draws an expression of the shapes Fast covers, and now and
// then one it does not (arithmetic, ??, a function call, a bare field).
func fastExprGen(t *rapid.T, depth int) string {
	operand := func(label string) string {
		if rapid.IntRange(0, 3).Draw(t, label+"-lit") == 0 {
			return rapid.SampledFrom(fastLiterals).Draw(t, label)
		}
		f := rapid.SampledFrom(fastFields).Draw(t, label)
		if f == "@t" || rapid.IntRange(0, 5).Draw(t, label+"-env") == 0 {
			return fmt.Sprintf("$env[%q]", f)
		}
		return f
	}
	kinds := 8
	if depth <= 0 {
		kinds = 4
	}
	switch rapid.IntRange(0, kinds).Draw(t, "shape") {
	case 0, 1:
		op := rapid.SampledFrom([]string{"==", "!=", "<", "<=", ">", ">="}).Draw(t, "cmp")
		return operand("l") + " " + op + " " + operand("r")
	case 2:
		n := rapid.IntRange(1, 4).Draw(t, "n")
		var lits []string
		for i := range n {
			lits = append(lits, rapid.SampledFrom(fastLiterals).Draw(t, "in"+strconv.Itoa(i)))
		}
		not := rapid.SampledFrom([]string{"", "not "}).Draw(t, "not")
		return operand("x") + " " + not + "in [" + strings.Join(lits, ", ") + "]"
	case 3:
		return rapid.SampledFrom([]string{"a", "a + 1 > 2", "(a ?? 0) == 0", "len(b) > 0", "true", "a == b",
			"a % 3 == 1", "(b ?? 1) % 2 == 0", "(a ?? b) == \"WARN\"", "a % b > 0", "(c ?? a ?? 2) % -3 < 1", "a ?? b"}).Draw(t, "other")
	case 4, 5:
		op := rapid.SampledFrom([]string{"&&", "||", "and", "or"}).Draw(t, "logic")
		return "(" + fastExprGen(t, depth-1) + ") " + op + " (" + fastExprGen(t, depth-1) + ")"
	case 6:
		return rapid.SampledFrom([]string{"!", "not "}).Draw(t, "neg") + "(" + fastExprGen(t, depth-1) + ")"
	case 7:
		// A non-bool operand of and/or: the VM fails, Fast must not decide.
		return operand("x") + " " + rapid.SampledFrom([]string{"&&", "||"}).Draw(t, "op") + " " + operand("y")
	}
	return operand("key") // a key expression's shape, as a predicate
}

// TestFastAgreesWithVM is the property the router relies on: where Fast
// decides, the VM returns the same value and no error, on random
// predicates and key expressions over random records.
func TestFastAgreesWithVM(t *testing.T) {
	var decided, compiled, total int
	rapid.Check(t, func(t *rapid.T) {
		asBool := rapid.IntRange(0, 4).Draw(t, "predicate") > 0
		src := fastExprGen(t, 2)
		e, err := CompileExpr(src, asBool)
		if err != nil {
			return // a shape the strict checks refuse (e.g. nil < 1)
		}
		total++
		fast := CompileFast(e.Program, asBool, fastSlot)
		if fast == nil {
			return
		}
		compiled++
		for r := range 8 { // several records per expression
			vars := make([]any, len(fastFields))
			env := map[string]any{}
			for i, f := range fastFields {
				v, present := fastValue(t, f+strconv.Itoa(r))
				vars[i] = v
				if present {
					env[f] = v
				}
			}
			got, ok := fast(vars)
			var machine vm.VM
			want, err := machine.Run(e.Program, env)
			if !ok {
				continue
			}
			decided++
			if err != nil {
				t.Fatalf("%s on %v: Fast decided %#v, the VM failed: %v", src, env, got, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s on %v: Fast %#v, VM %#v", src, env, got, want)
			}
		}
	})
	// Not vacuous: most drawn expressions compile to Fast, and Fast
	// decides on many records.
	if compiled*2 < total || decided < total {
		t.Fatalf("Fast compiled %d of %d expressions and decided %d times in %d records", compiled, total, decided, 8*compiled)
	}
	t.Logf("Fast compiled %d of %d expressions and decided %d times in %d records", compiled, total, decided, 8*compiled)
}

// TestCompileFastShapes: what the router's common predicates and keys
// compile to, and what is left to the VM.
func TestCompileFastShapes(t *testing.T) {
	vars := []any{"ERROR", 300, nil, "x"}
	for _, tc := range []struct {
		src    string
		asBool bool
		want   any // nil: not compiled
	}{
		{`a == "ERROR"`, true, true},
		{`a != "ERROR"`, true, false},
		{`a in ["WARN", "ERROR"]`, true, true},
		{`a not in ["WARN", "ERROR"]`, true, false},
		{`b > 250 && a == "ERROR"`, true, true},
		{`b < 250 || !(a == "WARN")`, true, true},
		{`c == nil`, true, true},
		{`$env["@t"] == "x"`, true, true},
		{`a`, false, "ERROR"},
		{`_topic == "logs"`, true, nil}, // metadata: not a slot here
		{`b + 1 > 250`, true, nil},      // arithmetic
		{`(c ?? 0) == 0`, true, true},
		{`(b ?? 0) % 7 == 6`, true, true},
		{`lower(a) == "error"`, true, nil}, // a call
	} {
		e, err := CompileExpr(tc.src, tc.asBool)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		fast := CompileFast(e.Program, tc.asBool, fastSlot)
		if tc.want == nil {
			if fast != nil {
				t.Errorf("%s: compiled to Fast, want the VM", tc.src)
			}
			continue
		}
		if fast == nil {
			t.Fatalf("%s: not compiled to Fast", tc.src)
		}
		if got, ok := fast(vars); !ok || got != tc.want {
			t.Errorf("%s = %v (decided %v), want %v", tc.src, got, ok, tc.want)
		}
	}
}
