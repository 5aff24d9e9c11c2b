package config

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/expr-lang/expr/vm"
	"pgregory.net/rapid"
)

// lookupKey is a row key as the test's table keys them (a string as it
// is, an int in decimal; lookup.KeyString's rule for those).
func lookupKey(k any) (string, bool) {
	switch v := k.(type) {
	case string:
		return v, true
	case int:
		return strconv.Itoa(v), true
	}
	return "", false
}

var fastLookupExprs = []string{
	`lookup("t", a)?.tier != "muted" && b == "ERROR"`,
	`lookup("t", a)?.tier == "vip"`,
	`lookup("t", a).tier == "vip"`,
	`lookup("t", a)?.tier`,
	`lookup("t", a).tier`,
	`(lookup("t", a)?.tier ?? "none") == "none"`,
	`lookup("t", a)?.n > 1`,
	`lookup("t", a)?.tier in ["vip", "basic"]`,
	`not (lookup("t", a)?.tier == "muted")`,
	`lookup("t", b ?? a)?.tier == "vip"`,
	`lookup("t", a)?.m?.k == 1`,        // a chain of two: the VM
	`lookup("t", a) == nil`,            // the row itself: the VM
	`lookup("t", a)?.tier + "x" == ""`, // arithmetic: the VM
}

// TestFastLookupAgreesWithVM: where the fast form of a lookup() field
// decides, the VM (which builds the row's map) returns the same value
// and no error, over random tables, keys of every type, missing keys,
// null and missing fields, fields of other types, and a TableField that
// sometimes does not decide.
func TestFastLookupAgreesWithVM(t *testing.T) {
	c, err := Load("t.yaml", []byte("application_id: a\nbrokers: [b:9092]\ninputs: [{topic: in}]\nrouting: {default: drop}\nroutes: [{name: r, topic: out}]\ndirty: {topic: d}\ntables: [{name: t, topic: tt}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	fields := []string{"a", "b"}
	slot := func(name string) (int, bool) {
		for i, f := range fields {
			if f == name {
				return i, true
			}
		}
		return 0, false
	}
	var decided, compiled int
	rapid.Check(t, func(t *rapid.T) {
		rows := map[string]map[string]any{}
		for _, k := range []string{"1", "2", "a", "vip"} {
			if rapid.IntRange(0, 4).Draw(t, "has-"+k) == 0 {
				continue
			}
			row := map[string]any{}
			for _, f := range []string{"tier", "n", "m"} {
				if v, present := fastValue(t, k+f); present {
					row[f] = v
				}
			}
			if rapid.Bool().Draw(t, k+"-tierString") {
				row["tier"] = rapid.SampledFrom([]string{"vip", "basic", "muted"}).Draw(t, k+"-tier")
			}
			rows[k] = row
		}
		decides := rapid.IntRange(0, 5).Draw(t, "decides") > 0
		fn := c.TableFunction(func(table string, key any, _ int64) (any, bool, error) {
			k, ok := lookupKey(key)
			if r, found := rows[k]; ok && found {
				return r, false, nil
			}
			return nil, false, nil
		})
		field := func(table string, key any, name string) (any, bool, bool) {
			if !decides {
				return nil, false, false
			}
			k, ok := lookupKey(key)
			r, found := rows[k]
			if !ok || !found {
				return nil, false, true
			}
			return r[name], true, true
		}
		src := rapid.SampledFrom(fastLookupExprs).Draw(t, "expr")
		asBool := src != `lookup("t", a)?.tier` && src != `lookup("t", a).tier`
		e, err := CompileExprWith(src, asBool, Functions{fn})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		fast := CompileFastTables(e.Program, asBool, slot, field)
		if fast == nil {
			return
		}
		compiled++
		for r := range 8 {
			vars := make([]any, len(fields))
			env := map[string]any{MetaEventTime: 0, MetaLookups: &LookupMarks{}}
			keys := []any{"1", "2", "a", "zz", 1, 2, 1.5, true, map[string]any{"k": 1}}
			for i, f := range fields {
				var v any
				present := true
				if rapid.IntRange(0, 5).Draw(t, f+strconv.Itoa(r)+"-own") > 0 {
					v = rapid.SampledFrom(keys).Draw(t, f+strconv.Itoa(r))
				} else {
					v, present = fastValue(t, f+strconv.Itoa(r))
				}
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
				t.Fatalf("%s on %v, rows %v: Fast decided %#v, the VM failed: %v", src, env, rows, got, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s on %v, rows %v: Fast %#v, VM %#v", src, env, rows, got, want)
			}
		}
	})
	if compiled == 0 || decided < compiled {
		t.Fatalf("Fast compiled %d expressions and decided %d times", compiled, decided)
	}
	t.Logf("Fast compiled %d expressions and decided %d times in %d records", compiled, decided, 8*compiled)
}

// TestCompileFastLookupShapes: the lookup() forms that compile to Fast,
// and those left to the VM.
func TestCompileFastLookupShapes(t *testing.T) {
	c, err := Load("t.yaml", []byte("application_id: a\nbrokers: [b:9092]\ninputs: [{topic: in}]\nrouting: {default: drop}\nroutes: [{name: r, topic: out}]\ndirty: {topic: d}\ntables: [{name: t, topic: tt}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	fn := c.TableFunction(func(string, any, int64) (any, bool, error) { return nil, false, nil })
	field := func(string, any, string) (any, bool, bool) { return "vip", true, true }
	slot := func(name string) (int, bool) { return 0, name == "a" }
	for src, fast := range map[string]bool{
		`lookup("t", a)?.tier != "muted"`: true,
		`lookup("t", a).tier == "vip"`:    true,
		`lookup("t", a)?.m?.k == 1`:       false,
		`lookup("t", a) == nil`:           false,
		`lookup("t", _topic)?.tier == ""`: false, // metadata: not a slot
	} {
		e, err := CompileExprWith(src, true, Functions{fn})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := CompileFastTables(e.Program, true, slot, field) != nil; got != fast {
			t.Errorf("%s: compiled to Fast %v, want %v", src, got, fast)
		}
		if CompileFast(e.Program, true, slot) != nil {
			t.Errorf("%s: compiled to Fast without a TableField", src)
		}
	}
}
