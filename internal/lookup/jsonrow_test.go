package lookup

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// jsonText is a JSON value as text, with the shapes the direct encoding
// must get right or leave to Decode: numbers at the edges of int64 and
// float64, escapes, non-ASCII and invalid UTF-8, names twice, spaces.
func jsonText(depth int) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		sp := rapid.SampledFrom([]string{"", " ", "\n\t "}).Draw(t, "space")
		kinds := 5
		if depth > 0 {
			kinds = 7
		}
		switch rapid.IntRange(0, kinds).Draw(t, "kind") {
		case 0:
			return rapid.SampledFrom([]string{"null", "true", "false"}).Draw(t, "lit")
		case 1, 2:
			return rapid.SampledFrom([]string{"0", "-0", "7", "-42", "300", "123456789012345678", "-999999999999999999",
				"9223372036854775807", "9223372036854775808", "-9223372036854775809", "12345678901234567890",
				"1.5", "-0.0", "1e3", "1E+2", "2.5e-3", "1e400", "-1e400", "0.1"}).Draw(t, "num")
		case 3, 4:
			return `"` + rapid.SampledFrom([]string{"", "vip", "eu-west-1", "é ü 日本", `a\"b`, `\u00e9`, `\n`, "\xff", `\ud800`}).Draw(t, "str") + `"`
		case 5:
			return sp + "[" + strings.Join(rapid.SliceOfN(jsonText(depth-1), 0, 4).Draw(t, "elems"), ","+sp) + "]"
		}
		return object(t, depth)
	})
}

func object(t *rapid.T, depth int) string {
	names := rapid.SliceOfN(rapid.SampledFrom([]string{"id", "tier", "a", "b", "é", "ab", "", `x\ty`, "region"}), 0, 6).Draw(t, "names")
	var b strings.Builder
	b.WriteString("{")
	for i, n := range names {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" \"" + n + "\" :" + jsonText(depth-1).Draw(t, "member"))
	}
	b.WriteString("}")
	return b.String()
}

// ApplyJSON keeps what Decode and Apply keep, row for row, and fails
// where Decode fails.
func TestApplyJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		direct, _ := New(Spec{Mode: Current})
		viaMap, _ := New(Spec{Mode: Current})
		for i := range rapid.IntRange(1, 8).Draw(t, "rows") {
			raw := object(t, 2)
			if rapid.IntRange(0, 9).Draw(t, "bad") == 0 {
				raw = rapid.SampledFrom([]string{"[1]", `"x"`, `{"a":1} {}`, "{", "", "null", raw + "x"}).Draw(t, "badRaw")
			}
			key := rapid.SampledFrom([]string{"k1", "k2", "k3"}).Draw(t, "key")
			ok, err := direct.ApplyJSON(key, 0, []byte(raw))
			row, derr := Decode([]byte(raw))
			if (err == nil) != (derr == nil) {
				t.Fatalf("row %d %s: ApplyJSON %v, Decode %v", i, raw, err, derr)
			}
			if derr == nil && ok != viaMap.Apply(key, 0, row) {
				t.Fatalf("row %d %s: admitted %v", i, raw, ok)
			}
			for _, k := range []string{"k1", "k2", "k3"} {
				got, gr := direct.Get(k, 0)
				want, wr := viaMap.Get(k, 0)
				if gr != wr || !reflect.DeepEqual(got, want) {
					t.Fatalf("after %s: Get(%s) %#v %v, via Decode %#v %v", raw, k, got, gr, want, wr)
				}
			}
		}
	})
}

// The direct path covers the common rows (no fallback to Decode).
func TestJSONEntryCovers(t *testing.T) {
	tb, _ := New(Spec{Mode: Current})
	for _, raw := range []string{`{"user_id":10000,"tier":"vip","region":"eu-west-1"}`, `{"id":"s-1","since":1789992000000,"n":[1,2.5,{"x":null}],"f":true}`} {
		if !json.Valid([]byte(raw)) {
			t.Fatal(raw)
		}
		if _, ok := tb.jsonEntry("k", []byte(raw)); !ok {
			t.Errorf("%s: left to Decode", raw)
		}
	}
}
