package stageone

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

func TestDirtyRecordKeepsTheInput(t *testing.T) {
	top := topo(t, withSchema, tsMillis)
	in := input(`{"id":"e-1","ts":"yesterday"}`, "trace", "abc", "trace", "again", "empty", "")
	o := process(t, top, in)
	o.wantDirty(t, wire.StageSchema, wire.ReasonSchema, "/ts")
	d := o.outs[0]
	if d.Topic != "dirty" || !bytes.Equal(d.Key, in.Key) || !bytes.Equal(d.Value, in.Value) || !d.Timestamp.Equal(in.Timestamp) {
		t.Fatalf("dirty record %+v: want the input's key, value and timestamp on topic dirty", d)
	}
	var got []string
	for _, h := range d.Headers {
		if h.Key != wire.HeaderError {
			got = append(got, h.Key+"="+string(h.Value))
		}
	}
	want := []string{
		"trace=abc", "trace=again", "empty=",
		wire.HeaderReason + "=" + wire.ReasonSchema,
		wire.HeaderStage + "=" + wire.StageSchema,
		wire.HeaderTopic + "=in",
		wire.HeaderPartition + "=3",
		wire.HeaderOffset + "=42",
		wire.HeaderTimestamp + "=1700000000456",
		wire.HeaderAppID + "=unit",
		wire.HeaderTopologyVersion + "=" + top.Version,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("headers\n %q\nwant (plus %s)\n %q", got, wire.HeaderError, want)
	}
	if _, ok := header(d, wire.HeaderTruncated); ok {
		t.Fatalf("a record that fits must not be marked truncated")
	}

	// A tombstone: the null value stays null, not empty.
	tomb := input("")
	tomb.Value = nil
	o = process(t, top, tomb)
	o.wantDirty(t, wire.StageDecode, wire.ReasonNullValue)
	if o.outs[0].Value != nil {
		t.Fatalf("tombstone written with value %q", o.outs[0].Value)
	}
}

func TestUnknownInputTopic(t *testing.T) {
	r := input(`{}`)
	r.Topic = "elsewhere"
	o := process(t, topo(t), r)
	o.wantDirty(t, wire.StageDecode, wire.ReasonUnknownTopic, `"elsewhere"`)
	if s, _ := header(o.outs[0], wire.HeaderTopic); s != "elsewhere" {
		t.Fatalf("source topic header %q", s)
	}
}

const small = "dirty: {topic: dirty, max_record_bytes: 2048, truncate_to: 1024}\n"

func TestTooLargeOutput(t *testing.T) {
	top := topo(t, small, `routes:
  - {name: a, topic: out.a}
  - {name: twice, topic: out.b, project: {a: s, b: s}}
`, "routing: {match: all, default: drop}\n")
	s := strings.Repeat("x", 700)
	in := `{"s":"` + s + `"}`
	o := process(t, top, input(in))
	o.wantTopics(t, "out.a", "out.b")

	s = strings.Repeat("x", 1100) // fits as input, not doubled
	in = `{"s":"` + s + `"}`
	o = process(t, top, input(in))
	o.wantDirty(t, wire.StageProduce, wire.ReasonTooLarge, `output for route "twice" is 2302 bytes, over the limit of topic "out.b": 2048 bytes`)
	if string(o.outs[0].Value) != in {
		t.Fatalf("too-large dirty record must hold the input, got %d bytes", len(o.outs[0].Value))
	}
	if _, ok := header(o.outs[0], wire.HeaderTruncated); ok {
		t.Fatalf("the input fits: it must not be truncated")
	}
}

// TestOutputLimits: each output topic has its own limit
// (SetOutputLimits, from the broker), apart from the dirty topic's: a
// record larger than dirty.max_record_bytes reaches a route whose topic
// allows it, and one over its route topic's limit goes to dirty whole,
// with the limit it hit, when the dirty topic holds it.
func TestOutputLimits(t *testing.T) {
	top := topo(t, "dirty: {topic: dirty, max_record_bytes: 4096, truncate_to: 1024}\n", `routes:
  - {name: big, topic: out.big, when: 'kind == "big"'}
  - {name: tight, topic: out.tight}
`)
	e := New(top)
	e.SetOutputLimits(map[string]int{"out.big": 10_000, "out.tight": 1500})
	if got := e.OutputLimit("out.big"); got != 10_000 {
		t.Fatalf("OutputLimit(out.big) = %d", got)
	}
	if got := e.OutputLimit("elsewhere"); got != 4096 {
		t.Fatalf("OutputLimit of a topic without a limit = %d, want dirty.max_record_bytes 4096 (no limits.max_record_bytes)", got)
	}
	in := `{"kind":"big","s":"` + strings.Repeat("x", 5000) + `"}` // over dirty's 4096
	outs := e.Process(input(in), metrics.NewTally())
	if len(outs) != 1 || outs[0].Topic != "out.big" || string(outs[0].Value) != in {
		t.Fatalf("a record its route's topic allows: %d outputs, the first to %s", len(outs), outs[0].Topic)
	}
	in = `{"kind":"small","s":"` + strings.Repeat("x", 1600) + `"}` // over out.tight's 1500; its dirty record fits 4096
	tally := metrics.NewTally()
	o := outcome{e.Process(input(in), tally), tally}
	o.wantDirty(t, wire.StageProduce, wire.ReasonTooLarge, `output for route "tight" is 1710 bytes, over the limit of topic "out.tight": 1500 bytes`)
	if string(o.outs[0].Value) != in {
		t.Fatalf("the dirty record must hold the input whole, got %d bytes", len(o.outs[0].Value))
	}
	if _, ok := header(o.outs[0], wire.HeaderTruncated); ok {
		t.Fatalf("the input fits the dirty topic: it must not be truncated")
	}
}

// TestOutputLimitsConfigured: limits.max_record_bytes caps every output
// without a limit from the broker, and never the dirty topic.
func TestOutputLimitsConfigured(t *testing.T) {
	e := New(topo(t, "limits: {max_record_bytes: 3000}\n"))
	if got := e.OutputLimit("out"); got != 3000 {
		t.Fatalf("OutputLimit = %d, want limits.max_record_bytes 3000", got)
	}
	if got := e.MaxRecordBytes(); got != config.DefaultMaxRecordBytes {
		t.Fatalf("the dirty cap = %d, want dirty.max_record_bytes' default", got)
	}
}

func TestTruncateTooLargeDirty(t *testing.T) {
	big := func(n int) string { return strings.Repeat("é", n/2) }
	for _, tc := range []struct {
		name          string
		top           *plan.Plan
		key, value    string
		hs            []string
		stage, reason string
		wantValue     int // bytes of value kept
	}{
		{"invalid JSON, large value", topo(t, small), "k", "{" + big(5000), nil, wire.StageDecode, wire.ReasonInvalidJSON, 1024},
		{"large key and headers", topo(t, small), big(3000), "x" + big(3000), []string{"h", big(600)}, wire.StageDecode, wire.ReasonInvalidJSON, -1},
		{"valid, but the output is too large", topo(t, small), "k", `{"pad":"` + big(3000) + `"}`, nil, wire.StageProduce, wire.ReasonTooLarge, -1},
		{"long error message", topo(t, small, tsRFC3339), big(5000), `{"ts":"` + big(3000) + `"}`, nil, wire.StageEventTime, wire.ReasonBadTime, -1},
		{"defaults", topo(t), big(2000), "[" + big(1_200_000), nil, wire.StageDecode, wire.ReasonInvalidJSON, 65536},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(tc.value, tc.hs...)
			in.Key = []byte(tc.key)
			o := process(t, tc.top, in)
			o.wantDirty(t, tc.stage, tc.reason)
			d := o.outs[0]
			if n, _ := header(d, wire.HeaderTruncated); n != strconv.Itoa(len(tc.key)+len(tc.value)) {
				t.Fatalf("%s = %q, want %d", wire.HeaderTruncated, n, len(tc.key)+len(tc.value))
			}
			if o.tally.Truncated != 1 {
				t.Fatalf("truncated count %d", o.tally.Truncated)
			}
			max := tc.top.Dirty.MaxRecordBytes
			if RecordSize(d) > max {
				t.Fatalf("truncated record is %d bytes, over max_record_bytes %d", RecordSize(d), max)
			}
			if !bytes.HasPrefix(in.Value, d.Value) || !bytes.HasPrefix(in.Key, d.Key) || len(d.Value) > tc.top.Dirty.TruncateTo || len(d.Key) > 1024 {
				t.Fatalf("kept key %d and value %d bytes: want prefixes of the input within the limits", len(d.Key), len(d.Value))
			}
			if tc.wantValue >= 0 && len(d.Value) != tc.wantValue {
				t.Fatalf("kept %d bytes of the value, want %d", len(d.Value), tc.wantValue)
			}
			if _, ok := header(d, "h"); ok {
				t.Fatalf("the input's own headers must be dropped from a truncated record")
			}
			for _, h := range []string{wire.HeaderReason, wire.HeaderStage, wire.HeaderTopic, wire.HeaderPartition, wire.HeaderOffset, wire.HeaderTimestamp, wire.HeaderAppID} {
				if _, ok := header(d, h); !ok {
					t.Fatalf("truncated record lost header %s", h)
				}
			}
		})
	}
}

// TestTruncateLongReason: with a small max_record_bytes even the reason
// headers may not fit (a long expression is quoted in the message): the
// message is cut, on a UTF-8 boundary, and the record still fits.
func TestTruncateLongReason(t *testing.T) {
	long := strings.Repeat("é", 600)
	top := topo(t, "dirty: {topic: dirty, max_record_bytes: 1100, truncate_to: 50}\n",
		`routes: [{name: r, topic: out, when: 'len(n) > 0 || x == "`+long+`"'}]`+"\n")
	in := input(`{"n":1,"pad":"`+strings.Repeat("p", 2000)+`"}`, "h", "v")
	o := process(t, top, in)
	o.wantDirty(t, wire.StageRoute, wire.ReasonExprError, `route "r": when "len(n) > 0`)
	d := o.outs[0]
	msg, _ := header(d, wire.HeaderError)
	if RecordSize(d) > 1100 || len(msg) >= 1000 || !utf8.ValidString(msg) {
		t.Fatalf("record %d bytes, error header %d bytes (valid UTF-8: %v)", RecordSize(d), len(msg), utf8.ValidString(msg))
	}
	if n, _ := header(d, wire.HeaderTruncated); n != strconv.Itoa(len(in.Key)+len(in.Value)) {
		t.Fatalf("%s = %q", wire.HeaderTruncated, n)
	}
}

func TestRecordErrorUnwraps(t *testing.T) {
	inner := errors.New("inner")
	var err error = &RecordError{Stage: wire.StageRoute, Reason: wire.ReasonExprError, Err: inner}
	var re *RecordError
	if !errors.Is(err, inner) || !errors.As(err, &re) || re.Reason != wire.ReasonExprError {
		t.Fatalf("RecordError does not unwrap: %v", err)
	}
}

// TestExampleTopologyOracle runs generated events through the example
// topology's engine and compares each with the generator's own answer.
func TestExampleTopologyOracle(t *testing.T) {
	top := exampleTopology(t, []string{"127.0.0.1:9092"}, config.ExactlyOnce)
	eng := New(top)
	topicOf := map[string]string{"dirty": top.Dirty.Topic}
	for _, r := range top.Routes {
		topicOf[r.Name] = r.Topic
	}
	reasonOf := map[string]string{
		gen.KindTruncated: wire.ReasonInvalidJSON, gen.KindBadUTF8: wire.ReasonInvalidUTF8, gen.KindArray: wire.ReasonNotObject,
		gen.KindEmpty: wire.ReasonEmptyValue, gen.KindNoLevel: wire.ReasonSchema, gen.KindBadLevel: wire.ReasonSchema,
		gen.KindStringTime: wire.ReasonSchema, gen.KindNegativeTS: wire.ReasonSchema, gen.KindMissingTime: wire.ReasonSchema,
	}
	g := gen.New(3)
	g.BadFraction = 0.2
	total := metrics.NewTally()
	kinds := map[string]int{}
	for i := range 5000 {
		ev := g.Next()
		kinds[ev.Kind]++
		r := &kgo.Record{Topic: "logs", Partition: int32(i % 6), Offset: int64(i), Key: ev.Key, Value: ev.Value, Timestamp: recordTime}
		tally := metrics.NewTally()
		outs := eng.Process(r, tally)
		checkConserved(t, top, r, outs, tally)
		total.Add(tally)
		if len(outs) != 1 || outs[0].Topic != topicOf[gen.RouteOf[ev.Kind]] {
			t.Fatalf("event %s (%s) went to %v, want %s", ev.ID, ev.Kind, topics(outs), topicOf[gen.RouteOf[ev.Kind]])
		}
		if want := reasonOf[ev.Kind]; want != "" {
			if got, _ := header(outs[0], wire.HeaderReason); got != want {
				t.Fatalf("event %s (%s): reason %q, want %q", ev.ID, ev.Kind, got, want)
			}
		}
		if ev.Kind == gen.KindError {
			if svc := serviceOf(ev.Value); string(outs[0].Key) != svc {
				t.Fatalf("error event %s keyed %q, want its service %q", ev.ID, outs[0].Key, svc)
			}
		} else if !bytes.Equal(outs[0].Key, ev.Key) {
			t.Fatalf("event %s keyed %q, want the input key", ev.ID, outs[0].Key)
		}
	}
	// Every kind of the JSON log generator occurs (the Avro generator's
	// hostile frames, gen.ReasonOf, are not JSON events).
	for k := range gen.RouteOf {
		if _, avro := gen.ReasonOf[k]; !avro && kinds[k] == 0 {
			t.Fatalf("kind %s never generated; only %v were", k, kinds)
		}
	}
	dirty := 0
	for _, n := range total.Dirty {
		dirty += n
	}
	if total.Records() != 5000 || total.Routed+dirty != 5000 {
		t.Fatalf("tally %+v does not add up to 5000", total)
	}
}

// Property: for any bytes and any record metadata, the engine returns
// either outputs on routes (routed +1), exactly one dirty record (dirty
// +1) or nothing (dropped +1), never panics (nothing recovers one: it
// fails the test), and every record it returns fits max_record_bytes.
func TestEngineProperty(t *testing.T) {
	tops := propertyTopologies(t)
	seen := metrics.NewTally()
	rapid.Check(t, func(rt *rapid.T) {
		top := rapid.SampledFrom(tops).Draw(rt, "topology")
		r := recordGen(top).Draw(rt, "record")
		tally := metrics.NewTally()
		outs := New(top).Process(r, tally)
		checkConserved(rt, top, r, outs, tally)
		checkOutputs(rt, top, r, outs, tally)
		seen.Add(tally)
	})
	// What the generated records exercised (go test -v).
	t.Logf("consumed %d: routed %d %v, dirty %v, dropped %v, truncated %d",
		seen.Records(), seen.Routed, seen.Routes, seen.Dirty, seen.Dropped, seen.Truncated)
}

// propertyTopologies cover every stage: schema, the event-time formats,
// first and all, a key, projections, predicates on fields typed any, the
// default route and drop, a small max_record_bytes.
func propertyTopologies(t testing.TB) []*plan.Plan {
	return []*plan.Plan{
		exampleTopology(t, []string{"127.0.0.1:9092"}, config.ExactlyOnce),
		topo(t, tsNested, small, "routing: {match: all, default: drop}\n", `routes:
  - {name: flag, topic: o.flag, when: flag, key: id}
  - {name: lvl, topic: o.lvl, when: 'level in ["ERROR", "WARN"] && _partition >= 0', key: 'string(user_id) + _key'}
  - {name: proj, topic: o.proj, when: 'o != nil', project: {id: id, o: o, n: 'user_id * 2', h: '_headers["h"]'}}
`),
		topo(t, tsSecs, "routing: {match: first, default: rest}\n", `routes:
  - {name: big, topic: o.big, when: 'latency_ms > 100.5', key: latency_ms}
  - {name: rest, topic: o.rest, when: 'len(message) > 3'}
`),
		topo(t, tsRFC3339, "routing: {match: all, default: drop}\n", `routes:
  - {name: a, topic: o.a, when: 'message matches "^re"', project: {m: 'upper(message)', ts: _event_time}}
  - {name: b, topic: o.b, when: 'o?.k == 1'}
`),
		topo(t, tsKafka, "routing: {match: first, default: drop}\n", "routes: [{name: a, topic: o.a, key: id}]\n"),
	}
}

var (
	jsonKeys   = []string{"id", "ts", "level", "service", "message", "user_id", "latency_ms", "flag", "o", "meta", "x", "\u00e9", ""}
	jsonAtoms  = []string{"null", "true", "false", "0", "-0", "1", "-1", "1.5", "1e2", "1E-2", "9007199254740993", "-9223372036854775808", "9223372036854775808", "1e400", "-1e400", "1790000000123", "1790000000.123", "253402300800000", `""`, `"INFO"`, `"WARN"`, `"ERROR"`, `"DEBUG"`, `"TRACE"`, `"e-1"`, `"checkout"`, `"2026-11-30T17:25:57Z"`, `"2026-11-30T17:25:57.5+02:00"`, `"yesterday"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, `"a\"b\\c"`, `"retry"`}
	whitespace = []string{"", " ", "\n", "\t", "\r\n  "}
)

// jsonish draws JSON-like text for top: mostly well-formed objects with
// the field names the topologies read and an event time in top's format,
// generated log events, and sometimes text broken by a cut, a stray byte
// or trailing noise, a JSON value that is not an object, arbitrary bytes.
func jsonish(top *plan.Plan) *rapid.Generator[[]byte] {
	var value func(depth int) *rapid.Generator[string]
	value = func(depth int) *rapid.Generator[string] {
		return rapid.Custom(func(t *rapid.T) string {
			choices := 3
			if depth < 4 {
				choices = 5
			}
			switch rapid.IntRange(0, choices-1).Draw(t, "kind") {
			case 0, 1:
				return rapid.SampledFrom(jsonAtoms).Draw(t, "atom")
			case 2:
				return jsonQuote(rapid.String().Draw(t, "string"))
			case 3:
				items := rapid.SliceOfN(value(depth+1), 0, 4).Draw(t, "items")
				return "[" + strings.Join(items, ",") + "]"
			default:
				return object(t, value(depth+1), "")
			}
		})
	}
	return rapid.Custom(func(t *rapid.T) []byte {
		ws := rapid.SampledFrom(whitespace)
		doc := ws.Draw(t, "before") + object(t, value(1), eventTime(t, top)) + ws.Draw(t, "after")
		// rapid favours small numbers: the likeliest shapes come first.
		switch rapid.IntRange(0, 19).Draw(t, "shape") {
		case 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10:
			return []byte(doc)
		case 11:
			return rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "bytes")
		case 12, 13, 14, 15:
			g := gen.New(rapid.Uint64().Draw(t, "seed"))
			g.BadFraction = 0.3
			return g.Next().Value
		case 16:
			return []byte(doc[:rapid.IntRange(0, len(doc)).Draw(t, "cut")])
		case 17:
			b := []byte(doc)
			i := rapid.IntRange(0, len(b)).Draw(t, "at")
			return slices.Insert(b, i, rapid.Byte().Draw(t, "stray"))
		case 18:
			return []byte(value(1).Draw(t, "not an object"))
		}
		return []byte(doc + rapid.SampledFrom([]string{"{}", "x", ",", "\x00", "\xff"}).Draw(t, "trailing"))
	})
}

// eventTime draws a "field":value pair for top's event time, mostly valid.
func eventTime(t *rapid.T, top *plan.Plan) string {
	if rapid.IntRange(0, 9).Draw(t, "time ok") == 9 {
		return ""
	}
	var v string
	switch top.EventTime.Format {
	case config.TimeKafka:
		return ""
	case config.TimeRFC3339:
		v = strconv.Quote(time.UnixMilli(rapid.Int64Range(0, 4e12).Draw(t, "ms")).UTC().Format(time.RFC3339Nano))
	case config.TimeEpochSecs:
		v = strconv.FormatFloat(rapid.Float64Range(0, 4e9).Draw(t, "s"), 'f', -1, 64)
	default:
		v = strconv.FormatInt(rapid.Int64Range(0, 4e12).Draw(t, "ms"), 10)
	}
	if f, ok := strings.CutPrefix(top.EventTime.Field, "meta."); ok {
		return `"meta":{"` + f + `":` + v + `}`
	}
	return strconv.Quote(top.EventTime.Field) + ":" + v
}

// object draws a JSON object; a non-empty first pair goes in at a drawn
// place.
func object(t *rapid.T, value *rapid.Generator[string], first string) string {
	n := rapid.IntRange(0, 8).Draw(t, "fields")
	parts := make([]string, n)
	for i := range parts {
		k := rapid.SampledFrom(jsonKeys).Draw(t, "key")
		parts[i] = jsonQuote(k) + ":" + value.Draw(t, "value")
	}
	if first != "" {
		parts = slices.Insert(parts, rapid.IntRange(0, n).Draw(t, "time at"), first)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func recordGen(top *plan.Plan) *rapid.Generator[*kgo.Record] {
	return rapid.Custom(func(t *rapid.T) *kgo.Record {
		r := &kgo.Record{
			Topic:     top.Inputs[0].Topic,
			Partition: rapid.Int32().Draw(t, "partition"),
			Offset:    rapid.Int64().Draw(t, "offset"),
			Value:     jsonish(top).Draw(t, "value"),
		}
		switch rapid.IntRange(0, 29).Draw(t, "odd") {
		case 28:
			r.Value = nil
		case 29:
			r.Topic = "not-an-input"
		}
		switch rapid.IntRange(0, 3).Draw(t, "timestamp") {
		case 0:
			r.Timestamp = time.UnixMilli(rapid.Int64Range(-1e15, 1e15).Draw(t, "ms"))
		case 1:
			r.Timestamp = recordTime
		} // else the zero time
		if rapid.Bool().Draw(t, "has key") {
			r.Key = rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "key")
		}
		for range rapid.IntRange(0, 3).Draw(t, "headers") {
			r.Headers = append(r.Headers, kgo.RecordHeader{
				Key:   rapid.SampledFrom([]string{"h", "x", wire.HeaderReason, ""}).Draw(t, "header key"),
				Value: rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(t, "header value"),
			})
		}
		if rapid.IntRange(0, 19).Draw(t, "oversize") == 19 {
			// Past the small topologies' max_record_bytes, whole or in part.
			pad := bytes.Repeat([]byte("p"), rapid.IntRange(1000, 3000).Draw(t, "pad"))
			switch rapid.IntRange(0, 2).Draw(t, "where") {
			case 0:
				r.Key = pad
			case 1:
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: "big", Value: pad})
			default:
				r.Value = append(append([]byte(`{"message":"`), pad...), `","level":"INFO","ts":1}`...)
			}
		}
		return r
	})
}

// jsonQuote is s as a JSON string (strconv.Quote writes \x00, which
// JSON does not have).
func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var serviceRe = regexp.MustCompile(`"service":"([^"]*)"`)

func serviceOf(v []byte) string {
	if m := serviceRe.FindSubmatch(v); m != nil {
		return string(m[1])
	}
	return ""
}

// TestEngineConcurrentUse: the Engine lends each record its evaluation
// state from a pool, so records processed on many goroutines at once
// give what one goroutine gives (run with -race). The topology mixes
// Fast predicates, VM-only expressions reading metadata, a projection
// and the default route, on generator events with bad ones among them.
func TestEngineConcurrentUse(t *testing.T) {
	top := topo(t, `routes:
  - {name: err, topic: e, when: 'level == "ERROR"', key: service}
  - {name: meta, topic: m, when: '_partition == 1 && level != "INFO"', key: '_key + ":" + string(_offset)'}
  - name: proj
    topic: p
    when: 'level in ["WARN", "DEBUG"]'
    project: {svc: service, lvl: lower(level)}
`, "routing: {default: err}\n")
	eng := New(top)
	g := gen.New(7)
	recs := make([]*kgo.Record, 2000)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "in", Partition: int32(i % 3), Offset: int64(i), Key: []byte("k" + strconv.Itoa(i)),
			Value: g.Next().Value, Timestamp: recordTime}
	}
	render := func(outs []*kgo.Record) string {
		var b strings.Builder
		for _, o := range outs {
			b.WriteString(o.Topic + "|" + string(o.Key) + "|" + string(o.Value) + "|")
			for _, h := range o.Headers {
				b.WriteString(h.Key + "=" + string(h.Value) + ";")
			}
			b.WriteByte('\n')
		}
		return b.String()
	}
	want := make([]string, len(recs))
	for i, r := range recs {
		want[i] = render(eng.Process(r, metrics.NewTally()))
	}
	got := make([]string, len(recs))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			tally := metrics.NewTally()
			for i := w; i < len(recs); i += 8 {
				got[i] = render(eng.Process(recs[i], tally))
			}
		})
	}
	wg.Wait()
	routes := map[string]bool{}
	for i := range recs {
		if got[i] != want[i] {
			t.Fatalf("record %d on 8 goroutines:\n%s\nalone:\n%s", i, got[i], want[i])
		}
		if f := strings.SplitN(want[i], "|", 2); len(f) == 2 {
			routes[f[0]] = true
		}
	}
	for _, topic := range []string{"e", "m", "p", top.Dirty.Topic} {
		if !routes[topic] {
			t.Errorf("no record went to %s: the test does not cover it (%v)", topic, routes)
		}
	}
}
