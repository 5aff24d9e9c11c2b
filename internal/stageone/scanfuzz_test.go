package stageone

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/sidestream/sidestream/internal/wire"
)

// scanSeeds are hostile inputs for the scan's differential targets:
// deep nesting, huge numbers, invalid UTF-8, lone surrogates, NUL,
// every kind of truncation, and the shared seeds.
func scanSeeds() []string {
	good := `{"id":"e-1","ts":1790000000123,"level":"ERROR","service":"s\u00e9","o":{"k":[1,2.5e-3,{"x":null}]},"flag":true,"user_id":9007199254740993,"latency_ms":-0.0}`
	seeds := append([]string{good}, fuzzSeeds...)
	for i := range len(good) {
		seeds = append(seeds, good[:i]) // truncated at every byte
	}
	return append(seeds,
		`{"o":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`}`,
		`{"o":`+strings.Repeat(`{"a":`, 10001)+"0"+strings.Repeat("}", 10001)+`}`,
		`{"p":`+strings.Repeat("[", 10000)+strings.Repeat("]", 9999)+`}`,
		`{"ts":`+strings.Repeat("9", 400)+`,"user_id":-`+strings.Repeat("1", 19)+`}`,
		`{"ts":1e400,"user_id":123456789012345678,"flag":1.5E+308}`,
		`{"ts":-62135596800001,"user_id":-0}`, `{"ts":253402300799999}`, `{"ts":253402300800}`,
		`{"level":"\ud800\udc00","service":"\udfff","o":"\u0000"}`,
		"{\"level\":\"\xed\xb0\x80\"}", "{\"level\":\"\xc0\xaf\"}", "{\"level\":\"\xf4\x90\x80\x80\"}",
		"{\"level\":\"a\x00b\"}", "{\"le\\u0076el\":\"x\",\"level\":\"y\"}", `{"level":"a\"b","level":"\\"}`,
		"{\"ts\":1}\x00", "{\"ts\":1} \n", "{\"ts\":1}\v", `{"ts":1}}`, `{"ts":1}]`, `{"ts":[1}`,
		`{"meta":[{"ts":1}]}`, `{"meta":{"ts":1,"ts":2}}`, `{"me\u0074a":{"ts":5},"x":1}`, `{"meta":{"ts":1},"meta":7}`,
		`{"meta":{"t\u0073":1790000000123}}`, `{"meta":{"ts":{"ts":1}}}`, `{"meta":null}`,
		`{"flag":truefalse}`, `{"flag":nulll}`, `{"user_id":1.}`, `{"user_id":-01}`, `{"user_id":0x1}`,
	)
}

type scanned struct {
	key string
	esc bool
	raw string
}

// FuzzEachMember: for any bytes, the validating scan accepts exactly what
// the checks it replaces accept (utf8.Valid, gjson.ValidBytes, an
// object), which is encoding/json.Valid's answer on UTF-8 but for
// nesting past encoding/json's 10000 levels (gjson has no limit), and
// finds the members the trusting walk found.
func FuzzEachMember(f *testing.F) {
	for _, s := range scanSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		var got, want []scanned
		ok := eachMember(v, func(key []byte, esc bool, raw []byte) {
			got = append(got, scanned{string(key), esc, string(raw)})
		})
		trimmed := bytes.TrimLeft(v, jsonSpace)
		object := len(trimmed) > 0 && trimmed[0] == '{'
		if g := utf8.Valid(v) && gjson.ValidBytes(v) && object; ok != g {
			t.Fatalf("%q: eachMember %v, utf8+gjson+object %v", v, ok, g)
		}
		if std := utf8.Valid(v) && json.Valid(v) && object; ok != std && !(ok && depth(v) > 10000) {
			t.Fatalf("%q: eachMember %v, utf8+encoding/json+object %v", v, ok, std)
		}
		if !ok {
			return
		}
		refEachMember(v, func(key []byte, esc bool, raw []byte) {
			want = append(want, scanned{string(key), esc, string(raw)})
		})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: members %+v, the trusting walk's %+v", v, got, want)
		}
	})
}

// FuzzDecodeOnce: for any bytes and every decoder of FuzzDecode, the
// one-pass decode gives what the two-pass one gave: the same dirty stage,
// reason and message, or the same fields (types included), event time
// and clamp. The one-pass target is reused from value to value, as stage
// one reuses it.
func FuzzDecodeOnce(f *testing.F) {
	for _, s := range scanSeeds() {
		f.Add([]byte(s), int64(1_790_000_000_000))
	}
	f.Add([]byte(`{"ts":1790000000123}`), int64(-62135596800000))
	decs := fuzzDecoders(f)
	outs := map[string]*Decoded{}
	for name, dec := range decs {
		outs[name] = &Decoded{vals: make([]any, len(dec.index))}
	}
	f.Fuzz(func(t *testing.T, value []byte, ts int64) {
		recTime := time.UnixMilli(ts)
		for name, dec := range decs {
			got := outs[name]
			clear(got.vals)
			got.EventTime, got.Clamped = 0, false
			want := &Decoded{vals: make([]any, len(dec.index))}
			gerr, werr := dec.decodeInto(got, "in", value, recTime), dec.refDecodeInto(want, "in", value, recTime)
			if (gerr == nil) != (werr == nil) || gerr != nil && (gerr.Stage != werr.Stage || gerr.Reason != werr.Reason || !sameMessage(gerr, werr)) {
				t.Fatalf("%s: %q: one pass %v, two passes %v", name, value, gerr, werr)
			}
			if gerr != nil {
				continue
			}
			if !reflect.DeepEqual(got.vals, want.vals) || got.EventTime != want.EventTime || got.Clamped != want.Clamped {
				t.Fatalf("%s: %q: one pass %#v %d %v, two passes %#v %d %v", name, value, got.vals, got.EventTime, got.Clamped, want.vals, want.EventTime, want.Clamped)
			}
		}
	})
}

// sameMessage: the two errors say the same. A schema violation's
// message lists up to three violations in the order the validator found
// them, which follows a map's and so differs from call to call even on
// one path: its violations are compared as a set, and not at all when
// the list was cut at three.
func sameMessage(a, b *RecordError) bool {
	am, bm := a.Err.Error(), b.Err.Error()
	if a.Reason != wire.ReasonSchema || am == bm {
		return am == bm
	}
	ap, bp := strings.Split(am, "; "), strings.Split(bm, "; ")
	if len(ap) >= 3 || len(bp) >= 3 {
		return true
	}
	trim := func(ps []string) []string {
		ps[0] = strings.TrimPrefix(ps[0], "schema violation ")
		slices.Sort(ps)
		return ps
	}
	return slices.Equal(trim(ap), trim(bp))
}
