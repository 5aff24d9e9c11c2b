// Package stageonetest holds the test helpers of stage one that the tests
// of internal/stageone, internal/stagetwo and internal/runtime share (and
// bench/'s tracing and lookup benchmarks): unit topologies, the
// conservation and output checks, the connect-json envelope check, the
// fuzz seeds and the benchmark loop. Only tests import it.
//
// Topo resolves schema paths against ExamplesDir, relative to the test's
// working directory: it serves packages two levels below the module root
// (internal/stageone, bench/tracing).
package stageonetest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// ExamplesDir is where unit-test topologies pretend to live, so their
// schema paths resolve like the example's: schemas/log-event.json.
const ExamplesDir = "../../examples/"

// Default sections of a unit-test topology; a section given to Topo
// replaces the default of the same key.
var topoDefaults = []string{
	"inputs: [{topic: in}]\n",
	"routing: {default: drop}\n",
	"routes: [{name: all, topic: out}]\n",
	"dirty: {topic: dirty}\n",
}

// Topo compiles a small topology from YAML sections such as
// "event_time: {field: ts, format: epoch_s}\n".
func Topo(t testing.TB, sections ...string) *plan.Plan {
	t.Helper()
	src := "application_id: unit\nbrokers: [127.0.0.1:9092]\n"
	for _, d := range topoDefaults {
		key := d[:strings.IndexByte(d, ':')+1]
		given := false
		for _, s := range sections {
			given = given || strings.HasPrefix(s, key)
		}
		if !given {
			src += d
		}
	}
	src += strings.Join(sections, "")
	cfg, err := config.Load(ExamplesDir+"unit.yaml", []byte(src))
	if err != nil {
		t.Fatalf("load topology:\n%s\n%v", src, err)
	}
	top, err := plan.Compile(cfg, ExamplesDir)
	if err != nil {
		t.Fatalf("compile topology:\n%s\n%v", src, err)
	}
	return top
}

// Sections of a unit topology: the example schema on the input, and the
// event-time formats.
const (
	WithSchema = "inputs: [{topic: in, schema: schemas/log-event.json}]\n"
	TSMillis   = "event_time: {field: ts, format: epoch_ms}\n"
	TSSecs     = "event_time: {field: ts, format: epoch_s}\n"
	TSRFC3339  = "event_time: {field: ts, format: rfc3339}\n"
	TSKafka    = "event_time: {format: kafka}\n"
	TSNested   = "event_time: {field: meta.ts, format: epoch_ms}\n"
)

// Good is a log event the example schema accepts.
const Good = `{"id":"e-1","ts":1790000000123,"level":"INFO","service":"checkout","message":"ok","user_id":42,"latency_ms":1.5}`

// RecordTime is the Kafka timestamp of the unit tests' records.
var RecordTime = time.UnixMilli(1_700_000_000_456)

// CheckConserved checks conservation for one input record r that stage
// one turned into outs: consumed once, and exactly one of routed (its
// outputs, one route count each), dirty (one dirty record) or dropped
// (nothing); no output over its limit (limits.max_record_bytes, or
// dirty.max_record_bytes) as size measures it.
func CheckConserved(t Fataler, top *plan.Plan, r *kgo.Record, outs []*kgo.Record, tally *metrics.Tally, size func(*kgo.Record) int) {
	t.Helper()
	dirty, dropped, routes := 0, 0, 0
	for _, n := range tally.Dirty {
		dirty += n
	}
	for _, n := range tally.Dropped {
		dropped += n
	}
	for _, n := range tally.Routes {
		routes += n
	}
	if tally.Consumed[r.Topic] != 1 || tally.Records() != 1 {
		t.Fatalf("consumed %v, want 1 on %q", tally.Consumed, r.Topic)
	}
	if tally.Routed+dirty+dropped != 1 {
		t.Fatalf("routed %d + dirty %d + dropped %d != consumed 1", tally.Routed, dirty, dropped)
	}
	switch {
	case tally.Routed == 1:
		if len(outs) == 0 || routes != len(outs) {
			t.Fatalf("routed with %d outputs and %d route counts", len(outs), routes)
		}
		for _, o := range outs {
			if o.Topic == top.Dirty.Topic {
				t.Fatalf("routed record written to the dirty topic")
			}
		}
	case dirty == 1:
		if len(outs) != 1 || outs[0].Topic != top.Dirty.Topic || routes != 0 {
			t.Fatalf("dirty with outputs %v and route counts %v", Topics(outs), tally.Routes)
		}
	default:
		if len(outs) != 0 || routes != 0 {
			t.Fatalf("dropped with outputs %v", Topics(outs))
		}
	}
	for _, o := range outs {
		limit := cmp.Or(top.Settings.Limits.MaxRecordBytes, top.Dirty.MaxRecordBytes)
		if o.Topic == top.Dirty.Topic {
			limit = top.Dirty.MaxRecordBytes
		}
		if size(o) > limit {
			t.Fatalf("output to %s is %d bytes, over its limit %d", o.Topic, size(o), limit)
		}
	}
}

// Topics lists the records' topics, in order.
func Topics(rs []*kgo.Record) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Topic)
	}
	return out
}

// Header is the value of r's last header named key.
func Header(r *kgo.Record, key string) (string, bool) {
	v, ok := "", false
	for _, h := range r.Headers {
		if h.Key == key {
			v, ok = string(h.Value), true
		}
	}
	return v, ok
}

// KnownReasons are the dirty reasons arbitrary input may meet (a recovered
// panic, stage internal, is not one).
var KnownReasons = map[string]bool{
	wire.ReasonNullValue: true, wire.ReasonEmptyValue: true, wire.ReasonInvalidUTF8: true, wire.ReasonInvalidJSON: true, wire.ReasonNotObject: true,
	wire.ReasonSchema: true, wire.ReasonMissingTime: true, wire.ReasonBadTime: true, wire.ReasonExprError: true, wire.ReasonPredicateType: true,
	wire.ReasonKeyError: true, wire.ReasonProjectError: true, wire.ReasonTooLarge: true, wire.ReasonUnknownTopic: true,
	// Event time bounds, and the stateful stages (FuzzStateful).
	wire.ReasonTimeAhead: true, wire.ReasonBadAssemblyID: true, wire.ReasonUnknownPart: true, wire.ReasonBadPartValue: true,
	wire.ReasonPartPredicate: true, wire.ReasonPartProjection: true, wire.ReasonAggregate: true,
}

// CheckOutputs checks what process returned beyond the counts: a dirty
// record carries the input (or a marked prefix of it) and a known reason;
// routed records keep the input's timestamp.
func CheckOutputs(t Fataler, top *plan.Plan, r *kgo.Record, outs []*kgo.Record, tally *metrics.Tally) {
	t.Helper()
	for k := range tally.Dirty {
		if !KnownReasons[k[1]] {
			t.Fatalf("dirty with unexpected stage/reason %v (a recovered panic is stage internal)", k)
		}
		d := outs[0]
		reason, _ := Header(d, wire.HeaderReason)
		stage, _ := Header(d, wire.HeaderStage)
		msg, _ := Header(d, wire.HeaderError)
		if reason != k[1] || stage != k[0] || msg == "" {
			t.Fatalf("dirty headers stage %q reason %q error %q, counted as %v", stage, reason, msg, k)
		}
		if _, cut := Header(d, wire.HeaderTruncated); cut {
			if !bytes.HasPrefix(r.Value, d.Value) || !bytes.HasPrefix(r.Key, d.Key) || tally.Truncated != 1 {
				t.Fatalf("truncated dirty record is not a prefix of the input")
			}
		} else if !bytes.Equal(d.Value, r.Value) || !bytes.Equal(d.Key, r.Key) || (r.Value == nil) != (d.Value == nil) || len(d.Headers) != len(r.Headers)+8+versioned(top, d) {
			t.Fatalf("dirty record does not carry the input untouched")
		}
	}
	for _, o := range outs {
		if !o.Timestamp.Equal(r.Timestamp) {
			t.Fatalf("output timestamp %v, input %v", o.Timestamp, r.Timestamp)
		}
	}
}

// versioned is 1 when d's last header names top's version (stage one's
// dirty records; stage two's carry none), else 0.
func versioned(top *plan.Plan, d *kgo.Record) int {
	if n := len(d.Headers); n > 0 && d.Headers[n-1].Key == wire.HeaderTopologyVersion && string(d.Headers[n-1].Value) == top.Version {
		return 1
	}
	return 0
}

// Fataler is what the checks need of a *testing.T or a *rapid.T.
type Fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// CheckEnvelope asserts that b is a Kafka Connect JsonConverter envelope
// whose schema is cs's and whose payload holds exactly cs's fields, in
// order, each null or a JSON value of the field's type. It is the contract
// the JsonConverter of a sink enforces.
func CheckEnvelope(t Fataler, cs *config.ConnectSchema, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("envelope is not valid JSON: %s", b)
	}
	env := gjson.ParseBytes(b)
	var keys []string
	env.ForEach(func(k, _ gjson.Result) bool { keys = append(keys, k.Str); return true })
	if strings.Join(keys, ",") != "schema,payload" {
		t.Fatalf("envelope members %v, want schema, payload: %s", keys, b)
	}
	s := env.Get("schema")
	if s.Get("type").Str != "struct" || s.Get("optional").Type != gjson.False {
		t.Fatalf("schema is not a required struct: %s", s.Raw)
	}
	fs := s.Get("fields").Array()
	if len(fs) != len(cs.Fields) {
		t.Fatalf("schema has %d fields, want %d: %s", len(fs), len(cs.Fields), s.Raw)
	}
	for i, f := range fs {
		if f.Get("field").Str != cs.Fields[i].Name || f.Get("type").Str != cs.Fields[i].Type || f.Get("optional").Type != gjson.True {
			t.Fatalf("schema field %d is %s, want optional %+v", i, f.Raw, cs.Fields[i])
		}
	}
	var names []string
	i := 0
	env.Get("payload").ForEach(func(k, v gjson.Result) bool {
		names = append(names, k.Str)
		if i >= len(cs.Fields) {
			return false
		}
		typ := cs.Fields[i].Type
		i++
		if v.Type == gjson.Null {
			return true
		}
		ok := false
		switch typ {
		case config.ConnectString:
			ok = v.Type == gjson.String
		case config.ConnectBoolean:
			ok = v.Type == gjson.True || v.Type == gjson.False
		case config.ConnectInt64:
			_, err := strconv.ParseInt(v.Raw, 10, 64)
			ok = v.Type == gjson.Number && err == nil
		case config.ConnectFloat64:
			f, err := strconv.ParseFloat(v.Raw, 64)
			ok = v.Type == gjson.Number && err == nil && !math.IsInf(f, 0)
		}
		if !ok {
			t.Fatalf("payload field %q = %s is not a %s", k.Str, v.Raw, typ)
		}
		return true
	})
	var want []string
	for _, f := range cs.Fields {
		want = append(want, f.Name)
	}
	if strings.Join(names, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("payload fields %q, want %q", names, want)
	}
}

// FuzzSeeds are the seeds the fuzz targets share; the larger ones (10k-deep nesting, long
// numbers) are in testdata/fuzz.
var FuzzSeeds = []string{
	Good,
	`{"ts":1790000000123,"level":"ERROR","service":"s","o":{"k":1},"flag":true,"user_id":7,"latency_ms":200.5,"message":"retry"}`,
	`{"meta":{"ts":1790000000123},"flag":"yes","id":"e-1","o":[1,{"a":null}]}`,
	`{"ts":"2026-11-30T17:25:57.123+02:00","message":"ready"}`,
	`{"ts":1790000000.123}`,
	`{"ts":1,"ts":"x"}`,
	`{"meta":{"ts":1},"meta":{"ts":2}}`,
	`{"level":"\ud800","ts":-0.0}`,
	`{"ts":1e999999999}`,
	`{"ts":-1e-999999999}`,
	"\xef\xbb\xbf{}",
	"\u00a0{}",
	"{\"a\":\"\x00\"}",
	`{"a":"` + "\xed\xa0\x80" + `"}`,
	`[{"ts":1}]`, `"s"`, `1`, `true`, `null`, ``, ` `, `{`, `{"ts":01}`,
}

// cpuNow is the CPU time this process has used (all threads, so GC
// included). CPU ns/op is steadier than ns/op on a shared machine: other
// processes stretch wall time, not this process's CPU time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Loop runs fn(i) under b.Loop and reports records/s and CPU ns/op.
func Loop(b *testing.B, fn func(i int)) {
	b.ReportAllocs()
	n := 0
	cpu0 := cpuNow()
	for b.Loop() {
		fn(n)
		n++
	}
	b.ReportMetric(float64(cpuNow()-cpu0)/float64(n), "cpu-ns/op")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
}

// ExampleTopology compiles examples/logs-by-level.yaml with brokers and
// guarantee.
func ExampleTopology(t testing.TB, brokers []string, guarantee config.Guarantee) *plan.Plan {
	t.Helper()
	cfg, err := config.LoadFile(ExamplesDir + "logs-by-level.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(config.Overrides{Brokers: brokers, Guarantee: string(guarantee)}); err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, ExamplesDir)
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// ExampleAt compiles the topology file at path with brokers, relative
// paths resolved next to it (the examples' schema files).
func ExampleAt(t testing.TB, path string, brokers []string) *plan.Plan {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return CompileAt(t, path, string(src), brokers, filepath.Dir(path)+"/")
}

// CompileAt loads a topology from src (name is for its errors), points it
// at brokers and compiles it with relative paths resolved in dir.
func CompileAt(t testing.TB, name, src string, brokers []string, dir string) *plan.Plan {
	t.Helper()
	cfg, err := config.Load(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(config.Overrides{Brokers: brokers}); err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	return top
}
