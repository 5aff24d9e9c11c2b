package stageone

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"pgregory.net/rapid"
)

// jsonGen draws a JSON value as text: every kind, strings with escapes
// (quotes, backslashes, brackets and commas inside), nesting, and the
// whitespace JSON allows between tokens.
func jsonGen(t *rapid.T, depth int) string {
	ws := func() string { return rapid.SampledFrom([]string{"", " ", "\n\t", "\r\n "}).Draw(t, "ws") }
	str := func() string {
		return rapid.SampledFrom([]string{`""`, `"a"`, `"x"`, `"\""`, `"\\"`, `"a\\\"b"`, `"}],{["`, `"\u0078"`, `"é"`, `"\n"`}).Draw(t, "str")
	}
	n := 6
	if depth <= 0 {
		n = 4
	}
	switch rapid.IntRange(0, n).Draw(t, "kind") {
	case 0:
		return rapid.SampledFrom([]string{"null", "true", "false"}).Draw(t, "lit")
	case 1:
		return rapid.SampledFrom([]string{"0", "-1", "1.5e3", "9007199254740993", "-0.0", "1E-2"}).Draw(t, "num")
	case 2, 3:
		return str()
	case 4:
		var els []string
		for range rapid.IntRange(0, 3).Draw(t, "len") {
			els = append(els, ws()+jsonGen(t, depth-1)+ws())
		}
		return "[" + strings.Join(els, ",") + "]"
	}
	var ms []string
	for range rapid.IntRange(0, 4).Draw(t, "members") {
		ms = append(ms, ws()+str()+ws()+":"+ws()+jsonGen(t, depth-1)+ws())
	}
	return "{" + strings.Join(ms, ",") + "}"
}

// TestEachMemberAgreesWithForEach: on any valid JSON object, eachMember
// finds the members gjson's ForEach does, in order, with the same keys
// and the same raw values.
func TestEachMemberAgreesWithForEach(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var obj string
		for !strings.HasPrefix(obj, "{") {
			obj = jsonGen(t, 3)
		}
		obj = rapid.SampledFrom([]string{"", " ", "\n"}).Draw(t, "lead") + obj + rapid.SampledFrom([]string{"", " \n"}).Draw(t, "trail")
		if !gjson.Valid(obj) {
			t.Fatalf("generated invalid JSON %s", obj)
		}
		type member struct{ key, raw string }
		var want, got []member
		gjson.Parse(obj).ForEach(func(k, v gjson.Result) bool {
			want = append(want, member{k.Str, v.Raw})
			return true
		})
		ok := eachMember([]byte(obj), func(key []byte, escaped bool, raw []byte) {
			k := string(key[1 : len(key)-1])
			if escaped {
				k = gjson.ParseBytes(key).Str
			}
			got = append(got, member{k, string(raw)})
		})
		if !ok {
			t.Fatalf("%s: eachMember refused a valid object", obj)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: eachMember %q, ForEach %q", obj, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: member %d: eachMember %q, ForEach %q", obj, i, got[i], want[i])
			}
		}
	})
}

// TestEachMemberInvalid: bytes that are not one valid JSON object are
// refused, each at its fault, without panicking or reading past the end.
func TestEachMemberInvalid(t *testing.T) {
	for _, v := range []string{
		"", " ", "{", `{"`, `{"a`, `{"a"`, `{"a":`, `{"a":"`, `{"a":[`, `{"a":{"b":`, `{"a\`, `[1]`, `{"a":1,`, `{,}`,
		`{"a":1}x`, `{"a":1}{}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`,
		`{"a":1e+}`, `{"a":+1}`, `{"a":tru}`, `{"a":nul}`, `{"a":True}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12G4"}`,
		"{\"a\":\"\x00\"}", "{\"a\":\"\t\"}", "{\"a\":\"\xff\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"\xc3\":1}",
		`{"a":[1,]}`, `{"a":[,1]}`, `{"a":[1 2]}`, `{"a":{"b":1]}`, `{"a":[1}}`, `{"a":{"b"}}`, `{"a":{"b":1,}}`,
		`{"a":[[[]]}`, `{"a":[[[]]]]}`, "\u00a0{}", "\xef\xbb\xbf{}", "{}\x00", `{"a":1}` + "\f",
	} {
		if eachMember([]byte(v), func(key []byte, _ bool, raw []byte) {
			if len(key) < 2 || key[0] != '"' || key[len(key)-1] != '"' || len(raw) == 0 {
				t.Fatalf("%q: key %q raw %q", v, key, raw)
			}
		}) {
			t.Fatalf("%q: accepted", v)
		}
	}
	for _, v := range []string{`{}`, " {} ", "\t\r\n{\n}\n", `{"a":[]}`, `{"a":{}}`, `{"a":[{},[]]}`, `{"":""}`, `{"a":"\ud800"}`, `{"a":-0.0e-0}`, "{\"a\":\"\xef\xbf\xbd\"}"} {
		if !eachMember([]byte(v), func([]byte, bool, []byte) {}) {
			t.Fatalf("%q: refused", v)
		}
	}
}

// TestEachMemberDeep: nesting is not recursion, so a value nested
// 300,000 deep is checked in linear time and refused when unbalanced.
func TestEachMemberDeep(t *testing.T) {
	const n = 300_000
	for _, c := range []struct {
		v  string
		ok bool
	}{
		{`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`, true},
		{`{"a":` + strings.Repeat(`{"b":`, n) + "1" + strings.Repeat("}", n) + `}`, true},
		{`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n-1) + `}`, false},
		{`{"a":` + strings.Repeat("[", n), false},
	} {
		if got := eachMember([]byte(c.v), func([]byte, bool, []byte) {}); got != c.ok || gjson.Valid(c.v) != c.ok {
			t.Fatalf("%.20q...: eachMember %v, gjson %v, want %v", c.v, got, gjson.Valid(c.v), c.ok)
		}
	}
}

// TestSlowMembersAgree: the fallback decodeInto keeps for a value the
// scan would refuse and validate accept (none is known) finds the
// members the scan finds, so taking it changes no field.
func TestSlowMembersAgree(t *testing.T) {
	dec := newDecoder(topo(t, tsMillis, `routes: [{name: all, topic: out, when: 'a != nil || x != nil || ts != nil'}]`+"\n"))
	rapid.Check(t, func(t *rapid.T) {
		var obj string
		for !strings.HasPrefix(obj, "{") {
			obj = jsonGen(t, 3)
		}
		fast, slow := &Decoded{}, &Decoded{}
		mf, ms := members{d: dec, out: fast}, members{d: dec, out: slow}
		if !eachMember([]byte(obj), mf.member) {
			t.Fatalf("%s: refused", obj)
		}
		ms.slowMembers([]byte(obj))
		if len(fast.spans) != len(slow.spans) || string(mf.timeRaw) != string(ms.timeRaw) {
			t.Fatalf("%s: scan %d spans, time %q; gjson %d spans, time %q", obj, len(fast.spans), mf.timeRaw, len(slow.spans), ms.timeRaw)
		}
		for i := range fast.spans {
			if f, s := fast.spans[i], slow.spans[i]; f.field != s.field || string(f.raw) != string(s.raw) {
				t.Fatalf("%s: span %d: scan %d %q, gjson %d %q", obj, i, f.field, f.raw, s.field, s.raw)
			}
		}
	})
}

// TestSpecial8: eight bytes at a time, the lowest mark of special8 is
// the first byte the byte table says is not plain (none: no mark), on
// words built from every kind of byte; and plainEnd agrees with a byte
// loop from every start, near the end of the slice too.
func TestSpecial8(t *testing.T) {
	kinds := []byte{0, 0x1f, 0x20, 0x21, '"', '\\', 'a', 0x7f, 0x80, 0xc3, 0xff, '"' ^ 0x80, '\\' + 1, '"' - 1, '"' + 1, 0x01, 0xdf}
	first := func(b []byte, from int) int {
		for from < len(b) && plain[b[from]] {
			from++
		}
		return from
	}
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.SampledFrom(kinds), 8, 8).Draw(t, "bytes")
		m := special8(binary.LittleEndian.Uint64(b))
		want := first(b, 0)
		got := 8
		if m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if got != want {
			t.Fatalf("% x: special8's first mark at byte %d, the table's first non-plain byte %d", b, got, want)
		}
		long := rapid.SliceOfN(rapid.SampledFrom(kinds), 0, 40).Draw(t, "slice")
		for from := range len(long) + 1 {
			if got, want := plainEnd(long, from), first(long, from); got != want {
				t.Fatalf("% x from %d: plainEnd %d, byte loop %d", long, from, got, want)
			}
		}
	})
	for c := range 256 {
		for at := range 8 {
			w := uint64(0x6161616161616161)&^(0xff<<(8*at)) | uint64(c)<<(8*at)
			m := special8(w)
			if plain[c] != (m == 0) || (m != 0 && bits.TrailingZeros64(m)>>3 != at) {
				t.Fatalf("byte %#x at %d among plain bytes: mask %#x, table plain %v", c, at, m, plain[c])
			}
		}
	}
}

// BenchmarkScan: the one pass (eachMember) against the two it replaced
// (utf8.Valid + gjson.ValidBytes, then the trusting member walk), on the
// generator's events.
func BenchmarkScan(b *testing.B) {
	evs := benchEvents(b, true)
	b.Run("eachMember", func(b *testing.B) {
		loop(b, func(i int) { eachMember(evs[i%len(evs)], func([]byte, bool, []byte) {}) })
	})
	b.Run("utf8+ValidBytes+walk", func(b *testing.B) {
		loop(b, func(i int) {
			v := evs[i%len(evs)]
			if utf8.Valid(v) && gjson.ValidBytes(v) {
				refEachMember(v, func([]byte, bool, []byte) {})
			}
		})
	})
}
