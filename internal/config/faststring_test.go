package config

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/expr-lang/expr/vm"
	"pgregory.net/rapid"
)

// fastStrExprGen draws a topic expression of the shapes FastString
// covers, and now and then one it does not or one the VM fails on.
func fastStrExprGen(t *rapid.T, depth int) string {
	kinds := 9
	if depth <= 0 {
		kinds = 3
	}
	switch rapid.IntRange(0, kinds).Draw(t, "shape") {
	case 0:
		return rapid.SampledFrom([]string{`"logs."`, `""`, `"x-"`, `"É."`}).Draw(t, "lit")
	case 1, 2:
		f := rapid.SampledFrom(fastFields).Draw(t, "field")
		if f == "@t" {
			return `$env["@t"]`
		}
		return f
	case 3, 4:
		return fastStrExprGen(t, depth-1) + " + " + fastStrExprGen(t, depth-1)
	case 5:
		return "string(" + fastValueExprGen(t) + ")"
	case 6:
		return rapid.SampledFrom([]string{"lower", "upper"}).Draw(t, "case") + "(" + fastStrExprGen(t, depth-1) + ")"
	case 7:
		return "(" + fastStrExprGen(t, depth-1) + ") ?? " + fastStrExprGen(t, depth-1)
	case 8:
		return rapid.SampledFrom([]string{"trim(a)", "a + 1", "a ? b : c", `string(a) + "." + string(1.5)`}).Draw(t, "other")
	}
	return `"t." + ` + fastStrExprGen(t, depth-1)
}

// fastValueExprGen draws string()'s argument: a field, a literal, a
// default or a modulo.
func fastValueExprGen(t *rapid.T) string {
	f := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "arg")
	switch rapid.IntRange(0, 4).Draw(t, "arg-shape") {
	case 0:
		return f
	case 1:
		return rapid.SampledFrom(fastLiterals).Draw(t, "arg-lit")
	case 2:
		return fmt.Sprintf("(%s ?? %s)", f, rapid.SampledFrom(fastLiterals).Draw(t, "default"))
	case 3:
		return fmt.Sprintf("(%s ?? 0) %% %s", f, rapid.SampledFrom([]string{"4", "1", "-3", "0"}).Draw(t, "mod"))
	}
	return fmt.Sprintf("%s %% %s", f, rapid.SampledFrom([]string{"4", "b", "0"}).Draw(t, "mod"))
}

// fastStrValue draws a field for FastString: fastValue's, with more
// strings (upper case, digits, non-ASCII).
func fastStrValue(t *rapid.T, label string) (any, bool) {
	if rapid.IntRange(0, 2).Draw(t, label+"-str") == 0 {
		return rapid.SampledFrom([]string{"Web", "API", "a.B-c_9", "Straße", "ǅ", "orders"}).Draw(t, label), true
	}
	return fastValue(t, label)
}

// TestFastStringAgreesWithVM: where FastString decides, the VM returns
// the same string and no error, on random topic expressions over
// random records; and the string is appended after what buf held.
func TestFastStringAgreesWithVM(t *testing.T) {
	var decided, compiled, total int
	rapid.Check(t, func(t *rapid.T) {
		src := fastStrExprGen(t, 3)
		e, err := CompileExpr(src, false)
		if err != nil {
			return // a shape the checks refuse (e.g. "a" + 1)
		}
		total++
		fast := CompileFastString(e.Program, fastSlot)
		if fast == nil {
			return
		}
		compiled++
		for r := range 8 {
			vars := make([]any, len(fastFields))
			env := map[string]any{}
			for i, f := range fastFields {
				v, present := fastStrValue(t, f+strconv.Itoa(r))
				vars[i] = v
				if present {
					env[f] = v
				}
			}
			got, ok := fast([]byte("prefix"), vars)
			var machine vm.VM
			want, err := machine.Run(e.Program, env)
			if !ok {
				continue
			}
			decided++
			if err != nil {
				t.Fatalf("%s on %v: FastString decided %q, the VM failed: %v", src, env, got, err)
			}
			if s, isStr := want.(string); !isStr || "prefix"+s != string(got) {
				t.Fatalf("%s on %v: FastString %q after the prefix, VM %#v", src, env, got[len("prefix"):], want)
			}
		}
	})
	if compiled*2 < total || decided < total {
		t.Fatalf("FastString compiled %d of %d expressions and decided %d times in %d records", compiled, total, decided, 8*compiled)
	}
	t.Logf("FastString compiled %d of %d expressions and decided %d times in %d records", compiled, total, decided, 8*compiled)
}

// TestCompileFastStringShapes: the topic expressions of the docs and the
// benchmark, and what is left to the VM.
func TestCompileFastStringShapes(t *testing.T) {
	vars := []any{"Web", 90998, nil, "x"}
	for _, tc := range []struct {
		src  string
		want string // "": not compiled
		ok   bool   // decided on vars
	}{
		{`"PREFIX.main." + string((b ?? 0) % 4)`, "PREFIX.main.2", true},
		{`"PREFIX.main." + string((c ?? 0) % 4)`, "PREFIX.main.0", true},
		{`"logs.service." + lower(a)`, "logs.service.web", true},
		{`upper(a) + "." + string(b)`, "WEB.90998", true},
		{`a + "." + (c ?? "none")`, "Web.none", true},
		{`"x." + string(b % 0)`, "?", false}, // the VM fails: division by zero
		{`"x." + b`, "?", false},             // the VM fails: string + int
		{`"x." + trim(a)`, "", false},        // a call FastString does not cover
		{`"x." + _key`, "", false},           // metadata: not a slot here
	} {
		e, err := CompileExpr(tc.src, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		fast := CompileFastString(e.Program, fastSlot)
		if tc.want == "" {
			if fast != nil {
				t.Errorf("%s: compiled to FastString, want the VM", tc.src)
			}
			continue
		}
		if fast == nil {
			t.Fatalf("%s: not compiled to FastString", tc.src)
		}
		got, ok := fast(nil, vars)
		if ok != tc.ok || ok && string(got) != tc.want {
			t.Errorf("%s = %q (decided %v), want %q (decided %v)", tc.src, got, ok, tc.want, tc.ok)
		}
	}
}
