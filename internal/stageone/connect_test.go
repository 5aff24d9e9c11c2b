package stageone

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/wire"
)

func schemaOf(fields ...config.ConnectField) *config.ConnectSchema {
	return config.NewConnectSchema(fields)
}

func TestConnectValues(t *testing.T) {
	cases := []struct {
		typ  string
		v    any
		want string // "" means an error
	}{
		{config.ConnectString, "a\"b", `"a\"b"`},
		{config.ConnectString, []byte("x"), `"x"`},
		{config.ConnectString, 3, ""},
		{config.ConnectString, nil, "null"},
		{config.ConnectInt64, 42, "42"},
		{config.ConnectInt64, int64(math.MaxInt64), "9223372036854775807"},
		{config.ConnectInt64, 3.0, "3"},
		{config.ConnectInt64, 3.5, ""},
		{config.ConnectInt64, 1e300, ""},
		{config.ConnectInt64, uint64(math.MaxUint64), ""},
		{config.ConnectInt64, "3", ""},
		{config.ConnectInt64, true, ""},
		{config.ConnectFloat64, 2.5, "2.5"},
		{config.ConnectFloat64, 7, "7"},
		{config.ConnectFloat64, 1e21, "1e+21"},
		{config.ConnectFloat64, math.NaN(), ""},
		{config.ConnectFloat64, math.Inf(-1), ""},
		{config.ConnectFloat64, "2.5", ""},
		{config.ConnectBoolean, true, "true"},
		{config.ConnectBoolean, 1, ""},
		{config.ConnectBoolean, map[string]any{}, ""},
		{"decimal", 1, ""},
	}
	for _, c := range cases {
		got, err := appendConnectValue(nil, c.typ, c.v)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s %#v: got %s, want an error", c.typ, c.v, got)
		case c.want != "" && err != nil:
			t.Errorf("%s %#v: %v", c.typ, c.v, err)
		case c.want != "" && string(got) != c.want:
			t.Errorf("%s %#v: got %s, want %s", c.typ, c.v, got, c.want)
		}
	}
}

// anyValue generates what an expression or the JSON decoder can hand to a
// projection: nil, bools, ints, floats (integral, huge, non-finite),
// strings, objects and arrays.
func anyValue() *rapid.Generator[any] {
	return rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Int(), func(i int) any { return i }),
		rapid.Map(rapid.Int64(), func(i int64) any { return i }),
		rapid.Map(rapid.Uint64(), func(i uint64) any { return i }),
		rapid.Map(rapid.Float64(), func(f float64) any { return f }),
		rapid.Map(rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), 0, math.Copysign(0, -1), 1 << 63, -(1 << 63), 1e-320}), func(f float64) any { return f }),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Just[any](map[string]any{"a": 1}),
		rapid.Just[any]([]any{1, "x"}),
	)
}

var connectTypes = []string{config.ConnectString, config.ConnectInt64, config.ConnectFloat64, config.ConnectBoolean}

// For any fields and any projected values: the envelope is either refused
// with the name of a field, or its schema matches its payload exactly.
// And a value of the field's own kind is never refused.
func TestConnectEnvelopeProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 8).Draw(t, "n")
		var fields []config.ConnectField
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			name := rapid.String().Draw(t, "name")
			if seen[name] {
				continue
			}
			seen[name] = true
			fields = append(fields, config.ConnectField{Name: name, Type: rapid.SampledFrom(connectTypes).Draw(t, "type")})
		}
		cs := schemaOf(fields...)
		vals := make([]any, len(fields))
		for i := range vals {
			vals[i] = anyValue().Draw(t, "value")
		}
		b, err := connectEnvelope(cs, vals)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "field ") {
				t.Fatalf("error does not name the field: %v", err)
			}
			for i, v := range vals {
				if fits(fields[i].Type, v) {
					continue
				}
				return // a refusal has a cause
			}
			t.Fatalf("every value fits its type, yet refused: %v (%#v)", err, vals)
		}
		checkEnvelope(t, cs, b)
		// The payload carries the values themselves.
		p := gjson.GetBytes(b, "payload")
		i := 0
		p.ForEach(func(_, v gjson.Result) bool {
			want := vals[i]
			i++
			switch x := want.(type) {
			case string:
				if v.Str != x {
					t.Fatalf("string %q written as %s", x, v.Raw)
				}
			case float64:
				if f := v.Float(); f != x && !(x == 0 && f == 0) {
					t.Fatalf("float %v written as %s", x, v.Raw)
				}
			}
			return true
		})
	})
}

// fits reports whether v is a value of Connect type typ as the router sees
// it (nil always fits: every field is optional).
func fits(typ string, v any) bool {
	if v == nil {
		return true
	}
	switch typ {
	case config.ConnectString:
		_, ok := v.(string)
		return ok
	case config.ConnectBoolean:
		_, ok := v.(bool)
		return ok
	case config.ConnectInt64:
		_, ok := asInt64(v)
		return ok
	case config.ConnectFloat64:
		f, ok := asFloat64(v)
		return ok && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return false
}

func TestConnectJSONRoutes(t *testing.T) {
	top := topo(t, withSchema, tsMillis, "routing: {match: all, default: drop}\n", `routes:
  - name: typed
    topic: out.typed
    key: id
    format: connect-json
    project:
      id: id
      latency: latency_ms
      user: user_id
      slow: latency_ms > 100
      svc: upper(service)
  - name: whole
    topic: out.whole
    format: connect-json
  - name: plain
    topic: out.plain
    project: {id: id}
`)
	o := process(t, top, input(`{"id":"e-1","ts":1700000000000,"level":"INFO","service":"api","message":"hi","latency_ms":250,"extra":[1]}`))
	if len(o.outs) != 3 {
		t.Fatalf("outputs %d, want 3: %v", len(o.outs), o.outs)
	}
	typed, whole, plain := o.outs[0], o.outs[1], o.outs[2]
	checkEnvelope(t, top.Route("typed").Connect, typed.Value)
	if string(typed.Key) != "e-1" {
		t.Fatalf("key %q: keys stay plain strings", typed.Key)
	}
	if got := gjson.GetBytes(typed.Value, "payload").Raw; got != `{"id":"e-1","latency":250,"user":null,"slow":true,"svc":"API"}` {
		t.Fatalf("typed payload %s", got)
	}
	checkEnvelope(t, top.Route("whole").Connect, whole.Value)
	if got := gjson.GetBytes(whole.Value, "payload").Raw; got != `{"id":"e-1","latency_ms":250,"level":"INFO","message":"hi","service":"api","ts":1700000000000,"user_id":null}` {
		t.Fatalf("payload from the input schema %s", got)
	}
	if string(plain.Value) != `{"id":"e-1"}` {
		t.Fatalf("json route %s", plain.Value)
	}
}

func TestConnectJSONTypeMismatchIsDirty(t *testing.T) {
	// int(n) is typed int64 by the compiler; a value int() cannot convert
	// fails at run time and the record goes to dirty, never half-written.
	top := topo(t, tsMillis, `routes:
  - name: typed
    topic: out.typed
    format: connect-json
    project:
      n: int(n)
`)
	o := process(t, top, input(`{"ts":1,"n":"seven"}`))
	o.wantDirty(t, wire.StageRoute, wire.ReasonProjectError)
	o = process(t, top, input(`{"ts":1,"n":7}`))
	checkEnvelope(t, top.Route("typed").Connect, o.outs[0].Value)
}

func TestConnectWindowValue(t *testing.T) {
	cs := schemaOf(
		config.ConnectField{Name: "group_key", Type: config.ConnectString},
		config.ConnectField{Name: "window_start", Type: config.ConnectInt64},
		config.ConnectField{Name: "window_end", Type: config.ConnectInt64},
		config.ConnectField{Name: "n", Type: config.ConnectInt64},
		config.ConnectField{Name: "avg", Type: config.ConnectFloat64},
		config.ConnectField{Name: "who", Type: config.ConnectString},
		config.ConnectField{Name: "revision", Type: config.ConnectInt64},
		config.ConnectField{Name: "final", Type: config.ConnectBoolean},
	)
	in := `{"key":"eu","window_start":60000,"window_end":120000,"aggregates":{"n":3,"avg":null,"who":"bob"},"revision":2,"final":false}`
	b, err := ConnectWindowValue(cs, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	checkEnvelope(t, cs, b)
	if got := gjson.GetBytes(b, "payload").Raw; got != `{"group_key":"eu","window_start":60000,"window_end":120000,"n":3,"avg":null,"who":"bob","revision":2,"final":false}` {
		t.Fatalf("payload %s", got)
	}
	if _, err := ConnectWindowValue(cs, []byte(`{"key":"eu","aggregates":{"who":7}}`)); err == nil || !strings.Contains(err.Error(), `"who"`) {
		t.Fatalf("a first/last of the wrong type: %v", err)
	}
}

func FuzzConnectWindowValue(f *testing.F) {
	f.Add([]byte(`{"key":"eu","window_start":0,"window_end":60000,"aggregates":{"n":2,"total":30.5,"who":"x"},"revision":1,"final":false}`))
	f.Add([]byte(`{"aggregates":{"n":1e400}}`))
	f.Add([]byte(`{"key":7}`))
	f.Add([]byte(`[`))
	cs := schemaOf(
		config.ConnectField{Name: "group_key", Type: config.ConnectString},
		config.ConnectField{Name: "window_start", Type: config.ConnectInt64},
		config.ConnectField{Name: "window_end", Type: config.ConnectInt64},
		config.ConnectField{Name: "n", Type: config.ConnectInt64},
		config.ConnectField{Name: "total", Type: config.ConnectFloat64},
		config.ConnectField{Name: "who", Type: config.ConnectString},
		config.ConnectField{Name: "revision", Type: config.ConnectInt64},
		config.ConnectField{Name: "final", Type: config.ConnectBoolean},
	)
	f.Fuzz(func(t *testing.T, value []byte) {
		b, err := ConnectWindowValue(cs, value)
		if err != nil {
			return
		}
		checkEnvelope(t, cs, b)
	})
}

func Example_connectEnvelope() {
	cs := schemaOf(config.ConnectField{Name: "id", Type: config.ConnectString}, config.ConnectField{Name: "n", Type: config.ConnectInt64})
	b, _ := connectEnvelope(cs, []any{"o-1", 3})
	fmt.Println(string(b))
	// Output: {"schema":{"type":"struct","optional":false,"fields":[{"field":"id","type":"string","optional":true},{"field":"n","type":"int64","optional":true}]},"payload":{"id":"o-1","n":3}}
}
