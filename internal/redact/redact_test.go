package redact

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestJSON(t *testing.T) {
	r := New([]string{"customer.email", "items.card", "tags.1", "secret", "deep.*.x"})
	for _, c := range []struct{ in, want string }{
		{`{"customer":{"email":"a@b.c","name":"Ann"},"id":7}`, `{"customer":{"email":"***","name":"Ann"},"id":7}`},
		{`{"items":[{"card":"4111","n":1},{"card":{"no":"4222"}},[{"card":5}]]}`, `{"items":[{"card":"***","n":1},{"card":"***"},[{"card":"***"}]]}`},
		{`{"tags":["a","b","c"]}`, `{"tags":["a","***","c"]}`},
		{`{"secret":"x","secret":"y"}`, `{"secret":"***","secret":"***"}`},
		{`{"secr\u0065t":"z"}`, `{"secret":"***"}`},
		{`{"deep":{"p":{"x":1,"y":2},"q":[{"x":3}]}}`, `{"deep":{"p":{"x":"***","y":2},"q":[{"x":"***"}]}}`},
		{`[{"secret":1}]`, `[{"secret":"***"}]`},
		{`"secret"`, `"secret"`},
		{`{"z":1.50e3,"b":true,"n":null}`, `{"z":1.50e3,"b":true,"n":null}`},
	} {
		out, _, ok := r.JSON([]byte(c.in))
		if !ok || string(out) != c.want {
			t.Errorf("%s:\n got %s (ok %v)\nwant %s", c.in, out, ok, c.want)
		}
	}
	for _, bad := range []string{``, `{"secret":`, `{"a":1} {"b":2}`, "\xff"} {
		if _, _, ok := r.JSON([]byte(bad)); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	_, hidden, _ := r.JSON([]byte(`{"secret":{"k":"v","n":12}}`))
	if !Leaks("failed at 12", hidden) || !Leaks("value v", hidden) || Leaks("key k", hidden) || Leaks("nothing here", hidden) {
		t.Errorf("hidden %q", hidden)
	}
}

// oracle hides by brute force over the decoded tree: the markers of
// every string under a hidden value.
func oracle(v any, segs []string, hidden map[string]bool) {
	if len(segs) == 0 {
		collect(v, hidden)
		return
	}
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if segs[0] == "*" || segs[0] == k {
				oracle(c, segs[1:], hidden)
			}
		}
	case []any:
		for i, c := range t {
			switch {
			case segs[0] == "*" || segs[0] == strconv.Itoa(i):
				oracle(c, segs[1:], hidden)
			case !isIndex(segs[0]):
				oracle(c, segs, hidden)
			}
		}
	}
}

func collect(v any, into map[string]bool) {
	switch t := v.(type) {
	case string:
		into[t] = true
	case map[string]any:
		for _, c := range t {
			collect(c, into)
		}
	case []any:
		for _, c := range t {
			collect(c, into)
		}
	}
}

var keys = []string{"a", "b", "c", "0", "a.b", "é", "<x>", "\"q\"", ""}

// genValue draws a JSON tree whose every string is a unique marker.
func genValue(t *rapid.T, depth int, n *int) any {
	kind := rapid.IntRange(0, 5).Draw(t, "kind")
	if depth > 3 {
		kind = rapid.IntRange(0, 2).Draw(t, "leaf")
	}
	switch kind {
	case 0, 1:
		*n++
		return fmt.Sprintf("m%03dq", *n)
	case 2:
		return rapid.SampledFrom([]any{1.5, true, nil, 42.0}).Draw(t, "scalar")
	case 3, 4:
		m := map[string]any{}
		for i := rapid.IntRange(0, 4).Draw(t, "fields"); i > 0; i-- {
			m[rapid.SampledFrom(keys).Draw(t, "key")] = genValue(t, depth+1, n)
		}
		return m
	default:
		var l []any
		for i := rapid.IntRange(0, 4).Draw(t, "elems"); i > 0; i-- {
			l = append(l, genValue(t, depth+1, n))
		}
		return l
	}
}

var segs = []string{"a", "b", "c", "0", "1", "*", "é", "<x>", "\"q\""}

// TestRedactProperty: over random JSON and random paths, no hidden
// string survives anywhere in the output, every other one does, and the
// output is JSON.
func TestRedactProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := 0
		v := genValue(t, 0, &n)
		var paths []string
		for i := rapid.IntRange(1, 3).Draw(t, "paths"); i > 0; i-- {
			var p []string
			for j := rapid.IntRange(1, 3).Draw(t, "segs"); j > 0; j-- {
				p = append(p, rapid.SampledFrom(segs).Draw(t, "seg"))
			}
			paths = append(paths, strings.Join(p, "."))
		}
		in, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out, hidden, ok := New(paths).JSON(in)
		if !ok {
			t.Fatalf("valid JSON refused: %s", in)
		}
		if !json.Valid(out) {
			t.Fatalf("output is not JSON: %s", out)
		}
		want := map[string]bool{}
		for _, p := range paths {
			oracle(v, strings.Split(p, "."), want)
		}
		all := map[string]bool{}
		collect(v, all)
		for m := range all {
			switch {
			case want[m] && strings.Contains(string(out), m):
				t.Fatalf("paths %q: hidden %s survives in %s (input %s)", paths, m, out, in)
			case want[m] && !Leaks(m, hidden):
				t.Fatalf("paths %q: hidden %s not reported", paths, m)
			case !want[m] && !strings.Contains(string(out), m):
				t.Fatalf("paths %q: %s lost, not hidden: %s (input %s)", paths, m, out, in)
			}
		}
	})
}
