package stageone

import (
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
	"github.com/sidestream/sidestream/internal/wire"
)

func TestDecodeDirty(t *testing.T) {
	tops := map[string]*plan.Plan{
		"schema":  topo(t, withSchema, tsMillis),
		"ms":      topo(t, tsMillis),
		"s":       topo(t, tsSecs),
		"rfc3339": topo(t, tsRFC3339),
		"kafka":   topo(t, tsKafka),
		"nested":  topo(t, tsNested),
	}
	for _, tc := range []struct {
		name   string
		top    string
		value  []byte
		stage  string
		reason string
		msg    []string // substrings the message must hold
	}{
		{"null value", "schema", nil, wire.StageDecode, wire.ReasonNullValue, []string{"null", "tombstone"}},
		{"empty", "schema", []byte{}, wire.StageDecode, wire.ReasonEmptyValue, []string{"empty"}},
		{"whitespace only", "schema", []byte(" \t\r\n "), wire.StageDecode, wire.ReasonEmptyValue, []string{"empty"}},
		// Not JSON whitespace: invalid JSON, not an empty value.
		{"no-break space only", "ms", []byte("\u00a0"), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON"}},
		{"form feed only", "ms", []byte("\f"), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON"}},
		{"invalid UTF-8 in a string", "schema", []byte(`{"message":"bad ` + "\xff\xfe" + `"}`), wire.StageDecode, wire.ReasonInvalidUTF8, []string{"UTF-8"}},
		{"invalid UTF-8 outside JSON", "ms", []byte("\xc3"), wire.StageDecode, wire.ReasonInvalidUTF8, []string{"UTF-8"}},
		{"overlong UTF-8", "ms", []byte(`{"a":"` + "\xc0\xaf" + `"}`), wire.StageDecode, wire.ReasonInvalidUTF8, []string{"UTF-8"}},
		{"truncated object", "schema", []byte(good[:40]), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "unexpected end of JSON input"}},
		{"trailing garbage", "ms", []byte(`{"ts":1} x`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "after top-level value", "at byte 10"}},
		{"two objects", "ms", []byte(`{"ts":1}{"ts":2}`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "at byte"}},
		{"single quotes", "ms", []byte(`{'ts':1}`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "at byte 2"}},
		{"unquoted key", "ms", []byte(`{ts:1}`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "at byte 2"}},
		{"trailing comma", "ms", []byte(`{"ts":1,}`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "at byte 9"}},
		{"NaN literal", "ms", []byte(`{"ts":NaN}`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "at byte 7"}},
		{"leading zero", "ms", []byte(`{"ts":01}`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON"}},
		{"bad escape", "ms", []byte(`{"a":"\x"}`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "escape"}},
		{"raw control character", "ms", []byte("{\"a\":\"\x01\"}"), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "in string literal"}},
		{"unterminated string", "ms", []byte(`{"a":"abc`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON"}},
		{"bare word", "ms", []byte(`hello`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"not valid JSON", "at byte 1"}},
		{"array", "schema", []byte(`[{"ts":1}]`), wire.StageDecode, wire.ReasonNotObject, []string{"JSON array, not an object"}},
		{"array with whitespace", "ms", []byte(" \n[1] "), wire.StageDecode, wire.ReasonNotObject, []string{"JSON array, not an object"}},
		{"string", "ms", []byte(`"text"`), wire.StageDecode, wire.ReasonNotObject, []string{"JSON string, not an object"}},
		{"number", "ms", []byte(`42`), wire.StageDecode, wire.ReasonNotObject, []string{"JSON number, not an object"}},
		{"negative number", "ms", []byte(`-1.5e3`), wire.StageDecode, wire.ReasonNotObject, []string{"JSON number, not an object"}},
		{"true", "ms", []byte(`true`), wire.StageDecode, wire.ReasonNotObject, []string{"JSON boolean, not an object"}},
		{"JSON null", "ms", []byte(`null`), wire.StageDecode, wire.ReasonNotObject, []string{"JSON null, not an object"}},
		{"schema: required field missing", "schema", []byte(`{"id":"e-1","ts":1,"service":"s","message":"m"}`), wire.StageSchema, wire.ReasonSchema, []string{"schema violation", "level"}},
		{"schema: value not in enum", "schema", []byte(strings.Replace(good, `"INFO"`, `"TRACE"`, 1)), wire.StageSchema, wire.ReasonSchema, []string{"schema violation", "/level"}},
		{"schema: wrong type", "schema", []byte(strings.Replace(good, `1790000000123`, `"yesterday"`, 1)), wire.StageSchema, wire.ReasonSchema, []string{"schema violation", "/ts", "integer"}},
		{"schema: below minimum", "schema", []byte(strings.Replace(good, `1790000000123`, `-5`, 1)), wire.StageSchema, wire.ReasonSchema, []string{"schema violation", "/ts", "minimum"}},
		{"schema: nesting beyond encoding/json", "schema", []byte(`{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`), wire.StageDecode, wire.ReasonInvalidJSON, []string{"max depth"}},
		{"missing event time", "ms", []byte(`{"level":"INFO"}`), wire.StageEventTime, wire.ReasonMissingTime, []string{`"ts"`, "missing"}},
		{"null event time", "ms", []byte(`{"ts":null}`), wire.StageEventTime, wire.ReasonMissingTime, []string{`"ts"`, "null"}},
		{"epoch_ms: string", "ms", []byte(`{"ts":"1790000000123"}`), wire.StageEventTime, wire.ReasonBadTime, []string{`"ts"`, "must be a number (epoch_ms)", `"1790000000123"`}},
		{"epoch_ms: bool", "ms", []byte(`{"ts":true}`), wire.StageEventTime, wire.ReasonBadTime, []string{"must be a number", "got true"}},
		{"epoch_ms: object", "ms", []byte(`{"ts":{"ms":1}}`), wire.StageEventTime, wire.ReasonBadTime, []string{"must be a number"}},
		{"epoch_ms: NaN as a string", "ms", []byte(`{"ts":"NaN"}`), wire.StageEventTime, wire.ReasonBadTime, []string{"must be a number", `"NaN"`}},
		{"epoch_ms: huge", "ms", []byte(`{"ts":1e300}`), wire.StageEventTime, wire.ReasonBadTime, []string{"1e300", "outside years 0001-9999"}},
		{"epoch_ms: beyond float64", "ms", []byte(`{"ts":1e400}`), wire.StageEventTime, wire.ReasonBadTime, []string{"1e400", "not a finite number"}},
		{"epoch_ms: year 10000", "ms", []byte(`{"ts":253402300800000}`), wire.StageEventTime, wire.ReasonBadTime, []string{"outside years"}},
		{"epoch_ms: before year 1", "ms", []byte(`{"ts":-62135596800001}`), wire.StageEventTime, wire.ReasonBadTime, []string{"outside years"}},
		{"epoch_ms: huge integer", "ms", []byte(`{"ts":123456789012345678901234567890}`), wire.StageEventTime, wire.ReasonBadTime, []string{"outside years"}},
		{"epoch_ms: long message is shortened", "ms", []byte(`{"ts":"` + strings.Repeat("é", 100) + `"}`), wire.StageEventTime, wire.ReasonBadTime, []string{"must be a number", "..."}},
		{"epoch_s: string", "s", []byte(`{"ts":"1790000000"}`), wire.StageEventTime, wire.ReasonBadTime, []string{"must be a number (epoch_s)"}},
		{"epoch_s: out of range in ms", "s", []byte(`{"ts":253402300800}`), wire.StageEventTime, wire.ReasonBadTime, []string{"outside years"}},
		{"rfc3339: not a date", "rfc3339", []byte(`{"ts":"yesterday"}`), wire.StageEventTime, wire.ReasonBadTime, []string{`"yesterday" is not RFC 3339`, "e.g. 2026-11-30T17:25:57Z"}},
		{"rfc3339: month 13", "rfc3339", []byte(`{"ts":"2026-13-01T00:00:00Z"}`), wire.StageEventTime, wire.ReasonBadTime, []string{"not RFC 3339"}},
		{"rfc3339: no zone", "rfc3339", []byte(`{"ts":"2026-11-30T17:25:57"}`), wire.StageEventTime, wire.ReasonBadTime, []string{"not RFC 3339"}},
		{"rfc3339: space for T", "rfc3339", []byte(`{"ts":"2026-11-30 17:25:57Z"}`), wire.StageEventTime, wire.ReasonBadTime, []string{"not RFC 3339"}},
		{"rfc3339: number", "rfc3339", []byte(`{"ts":1790000000123}`), wire.StageEventTime, wire.ReasonBadTime, []string{"must be an RFC 3339 string", "got 1790000000123"}},
		{"rfc3339: missing", "rfc3339", []byte(`{"time":"2026-11-30T17:25:57Z"}`), wire.StageEventTime, wire.ReasonMissingTime, []string{`"ts"`}},
		{"nested: missing", "nested", []byte(`{"meta":{"time":1}}`), wire.StageEventTime, wire.ReasonMissingTime, []string{`"meta.ts"`}},
		{"nested: parent not an object", "nested", []byte(`{"meta":5}`), wire.StageEventTime, wire.ReasonMissingTime, []string{`"meta.ts"`}},
		{"nested: top-level ts is not meta.ts", "nested", []byte(`{"ts":1,"meta.ts":2}`), wire.StageEventTime, wire.ReasonMissingTime, []string{`"meta.ts"`}},
		{"nested: string", "nested", []byte(`{"meta":{"ts":"x"}}`), wire.StageEventTime, wire.ReasonBadTime, []string{`"meta.ts"`, "must be a number"}},
		{"nested: last duplicate wins", "nested", []byte(`{"meta":{"ts":1,"ts":"late"}}`), wire.StageEventTime, wire.ReasonBadTime, []string{`"late"`}},
		{"kafka: value still validated", "kafka", []byte(`{"ts":1`), wire.StageDecode, wire.ReasonInvalidJSON, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, rerr := newDecoder(tops[tc.top]).decode("in", tc.value, recordTime)
			if rerr == nil {
				t.Fatalf("decode(%q) = %+v, want %s/%s", tc.value, d, tc.stage, tc.reason)
			}
			if rerr.Stage != tc.stage || rerr.Reason != tc.reason {
				t.Fatalf("decode(%q): %s/%s (%v), want %s/%s", tc.value, rerr.Stage, rerr.Reason, rerr.Err, tc.stage, tc.reason)
			}
			checkMessage(t, rerr, tc.msg)
		})
	}
}

// checkMessage asserts a dirty message names what a person needs to fix
// the record, and stays short, printable text for a header.
func checkMessage(t *testing.T, rerr *RecordError, want []string) {
	t.Helper()
	msg := rerr.Err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q does not contain %q", msg, w)
		}
	}
	if len(msg) < 10 || len(msg) > 1000 || strings.ContainsRune(msg, '\n') || !utf8.ValidString(msg) {
		t.Errorf("message %q is not one short line of valid UTF-8", msg)
	}
	if got := rerr.Error(); !strings.HasPrefix(got, rerr.Stage+": "+rerr.Reason+": ") {
		t.Errorf("Error() = %q, want stage and reason first", got)
	}
}

func TestDecodeEventTime(t *testing.T) {
	for _, tc := range []struct {
		name  string
		time  string
		value string
		want  int64
	}{
		{"epoch_ms", tsMillis, `{"ts":1790000000123}`, 1790000000123},
		{"epoch_ms zero", tsMillis, `{"ts":0}`, 0},
		{"epoch_ms negative", tsMillis, `{"ts":-1}`, -1},
		{"epoch_ms fraction floors", tsMillis, `{"ts":1790000000123.9}`, 1790000000123},
		{"epoch_ms fraction beyond float64 precision", tsMillis, `{"ts":1790000000123.99999999999}`, 1790000000123},
		{"epoch_ms negative fraction floors", tsMillis, `{"ts":-1.5}`, -2},
		{"epoch_ms exponent", tsMillis, `{"ts":1.790000000123e12}`, 1790000000123},
		{"epoch_ms exponent with sign", tsMillis, `{"ts":17900000001230E-1}`, 1790000000123},
		{"epoch_ms tiny", tsMillis, `{"ts":1e-300}`, 0},
		{"epoch_ms negative tiny", tsMillis, `{"ts":-1e-300}`, -1},
		{"epoch_ms last of year 9999", tsMillis, `{"ts":253402300799999}`, 253402300799999},
		{"epoch_ms first of year 1", tsMillis, `{"ts":-62135596800000}`, -62135596800000},
		{"epoch_ms with whitespace", tsMillis, " {\n\"ts\" : 5 }\n", 5},
		{"epoch_ms duplicate key: last wins", tsMillis, `{"ts":"bad","ts":7}`, 7},
		{"epoch_ms escaped key", tsMillis, `{"\u0074s":8}`, 8},
		{"epoch_s", tsSecs, `{"ts":1790000000}`, 1790000000000},
		{"epoch_s fractional", tsSecs, `{"ts":1790000000.5}`, 1790000000500},
		{"epoch_s fractional ms exact", tsSecs, `{"ts":1790000000.123}`, 1790000000123},
		{"epoch_s sub-ms floors", tsSecs, `{"ts":1790000000.0009}`, 1790000000000},
		{"epoch_s exponent", tsSecs, `{"ts":1.7900000001234e9}`, 1790000000123},
		{"epoch_s negative fraction", tsSecs, `{"ts":-0.0001}`, -1},
		{"epoch_s zero with exponent", tsSecs, `{"ts":0e999}`, 0},
		{"rfc3339 UTC", tsRFC3339, `{"ts":"2026-11-30T17:25:57Z"}`, time.Date(2026, 11, 30, 17, 25, 57, 0, time.UTC).UnixMilli()},
		{"rfc3339 offset and fraction", tsRFC3339, `{"ts":"2026-11-30T19:25:57.123456+02:00"}`, time.Date(2026, 11, 30, 17, 25, 57, 123e6, time.UTC).UnixMilli()},
		{"rfc3339 escaped string", tsRFC3339, `{"ts":"2026-11-30T17:25:57\u005a"}`, time.Date(2026, 11, 30, 17, 25, 57, 0, time.UTC).UnixMilli()},
		{"kafka uses the record timestamp", tsKafka, `{"ts":"not read"}`, recordTime.UnixMilli()},
		{"nested path", tsNested, `{"meta":{"ts":1790000000123},"ts":"top-level, not read"}`, 1790000000123},
		{"nested path: last duplicate parent wins", tsNested, `{"meta":{"ts":1},"meta":{"ts":2}}`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, rerr := newDecoder(topo(t, tc.time)).decode("in", []byte(tc.value), recordTime)
			if rerr != nil {
				t.Fatalf("decode(%s): %v", tc.value, rerr)
			}
			if d.EventTime != tc.want {
				t.Fatalf("decode(%s): event time %d, want %d", tc.value, d.EventTime, tc.want)
			}
		})
	}
}

func TestDecodeFields(t *testing.T) {
	// The route reads x, y, n, o and "@t"; nothing else is extracted.
	top := topo(t, `routes: [{name: all, topic: out, when: 'x != nil || y != nil || n != nil || o != nil || $env["@t"] != nil'}]`+"\n")
	if want := []string{"@t", "n", "o", "x", "y"}; !reflect.DeepEqual(top.Fields, want) {
		t.Fatalf("topology fields %q, want %q", top.Fields, want)
	}
	for _, tc := range []struct {
		name  string
		value string
		want  map[string]any
	}{
		{"only referenced fields", `{"x":1,"other":2,"y":"s","level":"INFO"}`, map[string]any{"x": 1, "y": "s"}},
		{"none present", `{"a":1}`, map[string]any{}},
		{"int beyond 2^53 stays exact", `{"x":9007199254740993}`, map[string]any{"x": 9007199254740993}},
		{"max int64", `{"x":9223372036854775807}`, map[string]any{"x": 9223372036854775807}},
		{"min int64", `{"x":-9223372036854775808}`, map[string]any{"x": -9223372036854775808}},
		{"beyond int64 becomes float", `{"x":9223372036854775808}`, map[string]any{"x": 9223372036854775808.0}},
		{"beyond float64 keeps the digits", `{"x":1e400}`, map[string]any{"x": "1e400"}},
		{"negative zero", `{"x":-0}`, map[string]any{"x": 0}},
		{"float", `{"x":1.5,"y":-2.25e-3}`, map[string]any{"x": 1.5, "y": -2.25e-3}},
		{"integral float stays float", `{"x":42.0,"y":1e2}`, map[string]any{"x": 42.0, "y": 100.0}},
		{"null, true, false (null reads as absent)", `{"x":null,"y":true,"n":false}`, map[string]any{"y": true, "n": false}},
		{"escaped string", `{"y":"a\nb\u00e9\ud83d\ude00\"q\""}`, map[string]any{"y": "a\nbé😀\"q\""}},
		{"escaped key", `{"\u0078":3}`, map[string]any{"x": 3}},
		{"key read through $env", `{"@t":"2026"}`, map[string]any{"@t": "2026"}},
		{"duplicate keys: last wins", `{"x":1,"y":"a","x":2}`, map[string]any{"x": 2, "y": "a"}},
		{"nested object, exact ints inside", `{"o":{"id":9007199254740993,"f":0.5,"a":[1,"s",null,true,{"k":"v"}],"e":{}}}`,
			map[string]any{"o": map[string]any{"id": 9007199254740993, "f": 0.5, "a": []any{1, "s", nil, true, map[string]any{"k": "v"}}, "e": map[string]any{}}}},
		{"nested duplicate keys: last wins", `{"o":{"k":1,"k":{"z":2}}}`, map[string]any{"o": map[string]any{"k": map[string]any{"z": 2}}}},
		{"array", `{"o":[[],[1.5]]}`, map[string]any{"o": []any{[]any{}, []any{1.5}}}},
		{"nested 1000 deep", `{"o":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, map[string]any{"o": nest(1000)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, rerr := newDecoder(top).decode("in", []byte(tc.value), recordTime)
			if rerr != nil {
				t.Fatalf("decode(%s): %v", tc.value, rerr)
			}
			if !reflect.DeepEqual(d.Fields, tc.want) {
				t.Fatalf("decode(%s): fields\n %#v\nwant\n %#v", tc.value, d.Fields, tc.want)
			}
		})
	}
}

func nest(depth int) any {
	v := []any{}
	for range depth - 1 {
		v = []any{v}
	}
	return v
}

// TestDecodeDeepNesting: a referenced field nested beyond encoding/json's
// 10000 levels goes to dirty, and takes linear time either way (gjson's
// Result.Value took minutes on a 1 MB value nested 500k deep).
func TestDecodeDeepNesting(t *testing.T) {
	top := topo(t, "routes: [{name: all, topic: out, when: 'o != nil'}]\n")
	for _, depth := range []int{10001, 400_000} {
		v := []byte(`{"o":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
		start := time.Now()
		_, rerr := newDecoder(top).decode("in", v, recordTime)
		if rerr == nil || rerr.Stage != wire.StageDecode || rerr.Reason != wire.ReasonInvalidJSON {
			t.Fatalf("depth %d: %v, want decode/invalid_json", depth, rerr)
		}
		checkMessage(t, rerr, []string{`field "o"`, "max depth"})
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("depth %d took %s", depth, d)
		}
	}
	// Not referenced: nothing decodes it, the record is valid.
	if _, rerr := newDecoder(top).decode("in", []byte(`{"p":`+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+`}`), recordTime); rerr != nil {
		t.Fatalf("unreferenced deep field: %v", rerr)
	}
}

func TestDecimalFloor(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		shift int
		want  int64
		ok    bool
	}{
		{"0", 0, 0, true},
		{"123", 0, 123, true},
		{"123", 3, 123000, true},
		{"1.2345", 3, 1234, true},
		{"-1.2345", 3, -1235, true},
		{"-1.000", 3, -1000, true},
		{"-1.0001", 3, -1001, true},
		{"1e3", 0, 1000, true},
		{"1E+3", 0, 1000, true},
		{"12345e-2", 0, 123, true},
		{"-12345e-2", 0, -124, true},
		{"0.000", 0, 0, true},
		{"-0", 0, 0, true},
		{"999999999999999999", 0, 999999999999999999, true},
		{"1e18", 0, 0, false},
		{"1e99999999999999999999", 0, 0, false},
		{"5e-99999", 0, 0, true},
	} {
		got, ok := decimalFloor(tc.raw, tc.shift)
		if got != tc.want || ok != tc.ok {
			t.Errorf("decimalFloor(%q, %d) = %d, %v; want %d, %v", tc.raw, tc.shift, got, ok, tc.want, tc.ok)
		}
	}
}

func TestShortenKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", 10) // 2 bytes each
	for n := range 21 {
		got := shorten(s, n)
		if !utf8.ValidString(got) || len(got) > n+3 {
			t.Fatalf("shorten(%q, %d) = %q", s, n, got)
		}
	}
}

// TestStrCache: the interned strings are the bytes asked for, whatever
// collides in the cache, and a string asked again comes from it.
func TestStrCache(t *testing.T) {
	out := &Decoded{}
	var words []string
	for i := range 500 {
		words = append(words, strings.Repeat(string(rune('a'+i%26)), i%40)+string(rune('A'+i%7)))
	}
	for range 3 {
		for i, w := range words {
			if got := out.str([]byte(w)); got != w {
				t.Fatalf("word %d: %q, want %q", i, got, w)
			}
		}
	}
	w := []byte("checkout")
	out.str(w)
	if n := testing.AllocsPerRun(100, func() { out.str(w) }); n != 0 {
		t.Fatalf("a cached string allocates %.0f times", n)
	}
	// A miss costs what no cache cost: the string and its box.
	var fresh [][]byte
	for i := range 200 {
		fresh = append(fresh, []byte("fresh-"+strconv.Itoa(i)))
	}
	next := 0
	if n := testing.AllocsPerRun(100, func() { out.str(fresh[next]); next++ }); n != 2 {
		t.Fatalf("a miss allocates %.0f times, want 2", n)
	}
	// Two values of one set both stay: find one that shares w's set.
	other := findSetMate(t, w)
	for range 3 {
		out.str(w)
		out.str(other)
	}
	if n := testing.AllocsPerRun(100, func() { out.str(w); out.str(other) }); n != 0 {
		t.Fatalf("two values of one set allocate %.0f times", n)
	}
}

// findSetMate is a short string whose strCache set is b's.
func findSetMate(t *testing.T, b []byte) []byte {
	set := func(b []byte) uint32 {
		h := uint32(2166136261)
		for _, c := range b {
			h = (h ^ uint32(c)) * 16777619
		}
		return h % uint32(len(strCache{}))
	}
	for i := range 10000 {
		if c := []byte("mate-" + strconv.Itoa(i)); set(c) == set(b) {
			return c
		}
	}
	t.Fatal("no set mate found")
	return nil
}

// TestDecodeAllocs: stage one of a W1 record (bench/topologies/w1.yaml)
// allocates nothing of its own once the field values it reads are
// interned: the decode nothing, the output records and their slices come
// from two slabs per slabRecords records.
func TestDecodeAllocs(t *testing.T) {
	top := stageonetest.ExampleAt(t, "../../bench/topologies/w1.yaml", []string{"127.0.0.1:9092"})
	dec := newDecoder(top)
	out := &Decoded{vals: make([]any, len(dec.index))}
	ts := time.UnixMilli(1_790_000_000_000)
	v := []byte(good)
	decode := func() {
		clear(out.vals)
		if rerr := dec.decodeInto(out, "logs", v, ts); rerr != nil {
			t.Fatal(rerr)
		}
	}
	if n := testing.AllocsPerRun(100, decode); n != 0 {
		t.Fatalf("decode allocates %.0f times per record", n)
	}
	eng := New(top)
	r := &kgo.Record{Topic: "logs", Value: v, Timestamp: ts}
	tally := metrics.NewTally()
	// Under the race detector sync.Pool drops evaluation states at
	// random, each a few allocations: the exact count is a plain build's.
	eng.Process(r, tally) // the pool's first state and slabs
	const n = 10 * slabRecords
	// Two slabs per slabRecords records; a GC in the loop may empty the
	// pool (a new state is a few allocations and two slabs of its own):
	// far below one allocation per record either way.
	if got, most := mallocs(n, func() { eng.Process(r, tally) }), uint64(n/16); got > most && !raceBuild {
		t.Fatalf("stage one allocates %d times for %d records, want at most %d", got, n, most)
	}
	if tally.Routes["main"] != n+1 {
		t.Fatalf("routes %v", tally.Routes)
	}
}

// TestWindowStageOneAllocs: a window route's stage-one record (W2: its
// group key, the envelope and the header slice) comes from the slabs
// too, not from three allocations per record.
func TestWindowStageOneAllocs(t *testing.T) {
	top := stageonetest.ExampleAt(t, "../../bench/topologies/w2.yaml", []string{"127.0.0.1:9092"})
	eng := New(top)
	r := &kgo.Record{Topic: "logs", Value: []byte(good), Timestamp: time.UnixMilli(1_790_000_000_000), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}}}
	tally := metrics.NewTally()
	outs := eng.Process(r, tally) // the pool's first state and slabs
	if len(outs) != 2 || len(outs[1].Headers) != 2 || string(outs[1].Key) != "checkout" {
		t.Fatalf("%d outputs: want the main route's record and the window's repartition record, keyed by service, with the input's header and the envelope", len(outs))
	}
	const n = 10 * slabRecords
	// Slabs of bytes hold about fifty envelopes and keys each.
	if got, most := mallocs(n, func() { eng.Process(r, tally) }), uint64(n/8); got > most && !raceBuild {
		t.Fatalf("stage one of a window route allocates %d times for %d records, want at most %d", got, n, most)
	}
}

// mallocs counts the heap allocations of n calls of f.
func mallocs(n int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}
