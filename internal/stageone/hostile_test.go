package stageone

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/wire"
)

// hostileTopo routes by level, re-keys by service and reads the event time
// from ts, with a one-hour bound on how far ahead an event time may be.
var hostileTopo = []string{
	"routes: [{name: errors, topic: errors, when: 'level == \"ERROR\"', key: service}, {name: main, topic: main}]\n",
	"routing: {default: main}\n",
	"event_time: {field: ts, format: epoch_ms, max_ahead: 1h}\n",
}

// TestHostileInput feeds each kind of hostile record through the engine:
// each is either routed as documented or goes to dirty with a specific
// stage and reason, and the record is never lost (checkConserved).
// docs/reliability.md's hostile-input table names these cases.
func TestHostileInput(t *testing.T) {
	top := topo(t, hostileTopo...)
	ts := recordTime.UnixMilli()
	now := func(d time.Duration) string { return itoa(ts + d.Milliseconds()) }
	deep := strings.Repeat(`{"a":`, 10_000) + "1" + strings.Repeat("}", 10_000)
	big := `{"level":"INFO","ts":` + now(0) + `,"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	bigHeader := kgo.RecordHeader{Key: strings.Repeat("h", 70_000), Value: bytes.Repeat([]byte{0xff, 0x00}, 40_000)}
	type want struct {
		route         string // a route's topic, or "" for dirty
		stage, reason string
	}
	dirty := func(stage, reason string) want { return want{"", stage, reason} }
	cases := []struct {
		name    string
		value   []byte
		key     []byte
		headers []kgo.RecordHeader
		want    want
	}{
		{"truncated object", []byte(`{"level":"INFO","ts":1`), nil, nil, dirty(wire.StageDecode, wire.ReasonInvalidJSON)},
		{"trailing garbage", []byte(`{"level":"INFO"} x`), nil, nil, dirty(wire.StageDecode, wire.ReasonInvalidJSON)},
		{"single quotes", []byte(`{'level':'INFO'}`), nil, nil, dirty(wire.StageDecode, wire.ReasonInvalidJSON)},
		{"trailing comma", []byte(`{"level":"INFO",}`), nil, nil, dirty(wire.StageDecode, wire.ReasonInvalidJSON)},
		{"NaN literal", []byte(`{"level":"INFO","ts":NaN}`), nil, nil, dirty(wire.StageDecode, wire.ReasonInvalidJSON)},
		{"two documents", []byte(`{"level":"INFO"}{"level":"ERROR"}`), nil, nil, dirty(wire.StageDecode, wire.ReasonInvalidJSON)},
		{"control character in a string", []byte("{\"level\":\"IN\x01FO\"}"), nil, nil, dirty(wire.StageDecode, wire.ReasonInvalidJSON)},
		{"invalid UTF-8", []byte("{\"level\":\"\xff\xfe\"}"), nil, nil, dirty(wire.StageDecode, wire.ReasonInvalidUTF8)},
		{"lone surrogate escape", []byte(`{"level":"\ud800","ts":` + now(0) + `}`), nil, nil, want{route: "main"}},
		{"nested 10,000 deep", []byte(deep), nil, nil, dirty(wire.StageEventTime, wire.ReasonMissingTime)},
		{"nested 10,000 deep, unclosed", []byte(strings.Repeat("[", 10_000)), nil, nil, dirty(wire.StageDecode, wire.ReasonInvalidJSON)},
		{"1 MiB value", []byte(big), nil, nil, dirty(wire.StageProduce, wire.ReasonTooLarge)},
		{"empty value", []byte{}, nil, nil, dirty(wire.StageDecode, wire.ReasonEmptyValue)},
		{"only whitespace", []byte(" \n\t"), nil, nil, dirty(wire.StageDecode, wire.ReasonEmptyValue)},
		{"null value (tombstone)", nil, []byte("k"), nil, dirty(wire.StageDecode, wire.ReasonNullValue)},
		{"null key", []byte(`{"level":"INFO","ts":` + now(0) + `}`), nil, nil, want{route: "main"}},
		{"JSON array", []byte(`[1,2]`), nil, nil, dirty(wire.StageDecode, wire.ReasonNotObject)},
		{"JSON string", []byte(`"x"`), nil, nil, dirty(wire.StageDecode, wire.ReasonNotObject)},
		{"JSON null", []byte(`null`), nil, nil, dirty(wire.StageDecode, wire.ReasonNotObject)},
		{"duplicate field: the last wins", []byte(`{"level":"INFO","level":"ERROR","service":"s","ts":` + now(0) + `}`), nil, nil, want{route: "errors"}},
		{"integer beyond int64", []byte(`{"level":"INFO","ts":99999999999999999999999}`), nil, nil, dirty(wire.StageEventTime, wire.ReasonBadTime)},
		{"number beyond float64", []byte(`{"level":"INFO","ts":1e400}`), nil, nil, dirty(wire.StageEventTime, wire.ReasonBadTime)},
		{"negative event time", []byte(`{"level":"INFO","ts":-5000}`), nil, nil, want{route: "main"}},
		{"event time before year 1", []byte(`{"level":"INFO","ts":-62135596800001}`), nil, nil, dirty(wire.StageEventTime, wire.ReasonBadTime)},
		{"event time far in the past", []byte(`{"level":"INFO","ts":1}`), nil, nil, want{route: "main"}},
		{"event time within max_ahead", []byte(`{"level":"INFO","ts":` + now(59*time.Minute) + `}`), nil, nil, want{route: "main"}},
		{"event time beyond max_ahead", []byte(`{"level":"INFO","ts":` + now(2*time.Hour) + `}`), nil, nil, dirty(wire.StageEventTime, wire.ReasonTimeAhead)},
		{"event time in year 9999", []byte(`{"level":"INFO","ts":253402300799999}`), nil, nil, dirty(wire.StageEventTime, wire.ReasonTimeAhead)},
		{"event time as a string", []byte(`{"level":"INFO","ts":"1790000000000"}`), nil, nil, dirty(wire.StageEventTime, wire.ReasonBadTime)},
		{"event time as an object", []byte(`{"level":"INFO","ts":{"ms":1}}`), nil, nil, dirty(wire.StageEventTime, wire.ReasonBadTime)},
		{"event time missing", []byte(`{"level":"INFO"}`), nil, nil, dirty(wire.StageEventTime, wire.ReasonMissingTime)},
		{"re-key field missing", []byte(`{"level":"ERROR","ts":` + now(0) + `}`), nil, nil, dirty(wire.StageRoute, wire.ReasonKeyError)},
		{"re-key field an object: its JSON is the key", []byte(`{"level":"ERROR","service":{"a":1},"ts":` + now(0) + `}`), nil, nil, want{route: "errors"}},
		{"predicate field of another type", []byte(`{"level":7,"ts":` + now(0) + `}`), nil, nil, want{route: "main"}},
		{"huge binary header", []byte(`{"level":"INFO","ts":` + now(0) + `}`), nil, []kgo.RecordHeader{bigHeader}, want{route: "main"}},
		{"huge binary header on a bad record", []byte(`{`), nil, []kgo.RecordHeader{bigHeader, bigHeader}, dirty(wire.StageDecode, wire.ReasonInvalidJSON)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &kgo.Record{Topic: "in", Partition: 1, Offset: 7, Key: tc.key, Value: tc.value, Headers: tc.headers, Timestamp: recordTime}
			o := process(t, top, r)
			if tc.want.route == "" {
				o.wantDirty(t, tc.want.stage, tc.want.reason)
				return
			}
			if o.tally.Routed != 1 || len(o.outs) != 1 || o.outs[0].Topic != tc.want.route {
				t.Fatalf("outputs %v, dirty %v: want one record on %s", topics(o.outs), o.tally.Dirty, tc.want.route)
			}
			if !bytes.Equal(o.outs[0].Value, tc.value) {
				t.Fatalf("routed value changed: %q", o.outs[0].Value)
			}
		})
	}
}

// TestEventTimeClamp: with on_ahead: clamp an event time beyond max_ahead
// is set to the bound, counted, and the record routed; within the bound
// nothing changes.
func TestEventTimeClamp(t *testing.T) {
	top := topo(t, "event_time: {field: ts, format: epoch_ms, max_ahead: 10m, on_ahead: clamp}\n",
		"routes: [{name: all, topic: out, project: {t: _event_time}}]\n")
	ts := recordTime.UnixMilli()
	for _, tc := range []struct {
		ahead   time.Duration
		want    int64
		clamped int
	}{
		{0, ts, 0},
		{10 * time.Minute, ts + 600_000, 0},
		{10*time.Minute + time.Millisecond, ts + 600_000, 1},
		{1000 * time.Hour, ts + 600_000, 1},
	} {
		o := process(t, top, input(`{"ts":`+itoa(ts+tc.ahead.Milliseconds())+`}`))
		if o.tally.Routed != 1 {
			t.Fatalf("ahead %s: dirty %v", tc.ahead, o.tally.Dirty)
		}
		if got := string(o.outs[0].Value); got != `{"t":`+itoa(tc.want)+`}` {
			t.Errorf("ahead %s: projected %s, want t=%d", tc.ahead, got, tc.want)
		}
		if o.tally.Clamped != tc.clamped {
			t.Errorf("ahead %s: clamped %d, want %d", tc.ahead, o.tally.Clamped, tc.clamped)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
