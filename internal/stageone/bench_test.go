package stageone

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
)

// Benchmarks of the per-record path on generator events (~300-byte log
// events, 1% malformed), the example topology's input. Each reports
// records/s on one core besides ns/op; docs/benchmarks.md has the figures.

func benchEvents(b *testing.B, goodOnly bool) [][]byte {
	g := gen.New(1)
	if goodOnly {
		g.BadFraction = 0
	}
	out := make([][]byte, 4096)
	size := 0
	for i := range out {
		out[i] = g.Next().Value
		size += len(out[i])
	}
	b.SetBytes(int64(size / len(out)))
	return out
}

// benchTopologies: the example as shipped (JSON Schema validation on
// every record: its fast path, schemafast.go, and the validator for the
// records it does not pass), the same with the validator alone (the fast
// path cleared by withoutFastPath: both code paths in one binary), the
// same without its schema, and the end-to-end benchmark's workload W1
// (bench/topologies/w1.yaml: no schema, the Kafka timestamp as event
// time), and stage one of W2 (bench/topologies/w2.yaml: W1's routes and a
// window route, whose records go to its repartition topic with the
// stage-one headers), and W1 with the main route's topic computed per
// record (bench/topologies/w1-topic.yaml: four topics by user_id, every
// one existing: benchOptions).
func benchTopologies(b *testing.B) map[string]*plan.Plan {
	noSchema, err := config.LoadFile("../../examples/logs-by-level.yaml")
	if err != nil {
		b.Fatal(err)
	}
	noSchema.Inputs[0].Schema = ""
	top, err := plan.Compile(noSchema, "../../examples/")
	if err != nil {
		b.Fatal(err)
	}
	return map[string]*plan.Plan{
		"schema":           exampleTopology(b, []string{"127.0.0.1:9092"}, config.ExactlyOnce),
		"schema-validator": exampleTopology(b, []string{"127.0.0.1:9092"}, config.ExactlyOnce),
		"no-schema":        top,
		"w1":               stageonetest.ExampleAt(b, "../../bench/topologies/w1.yaml", []string{"127.0.0.1:9092"}),
		"w2":               stageonetest.ExampleAt(b, "../../bench/topologies/w2.yaml", []string{"127.0.0.1:9092"}),
		"w3":               stageonetest.ExampleAt(b, "../../bench/topologies/w3.yaml", []string{"127.0.0.1:9092"}),
		"w1-topic":         stageonetest.ExampleAt(b, "../../bench/topologies/w1-topic.yaml", []string{"127.0.0.1:9092"}),
	}
}

var benchNames = []string{"schema", "schema-validator", "no-schema", "w1", "w2", "w3", "w1-topic"}

// benchOptions are the engine options of a benchmark topology: w1-topic
// gets a resolver that finds every topic (the runtime's answers from its
// cache after the first record of each topic).
func benchOptions(name string) []Option {
	if name == "w1-topic" {
		return []Option{WithTopics(existingTopics{})}
	}
	return nil
}

// existingTopics is a TopicResolver under which every topic exists.
type existingTopics struct{}

func (existingTopics) Resolve(context.Context, *plan.RouteNode, string) error { return nil }

// withoutFastPath clears the schema fast path of the "schema-validator"
// benchmarks: every record goes to the validator, as before it.
func withoutFastPath(name string, d *decoder) {
	if name == "schema-validator" {
		clear(d.fast)
	}
}

// BenchmarkDecode: validation and extraction of the event time and the
// fields the routes read (level, service).
func BenchmarkDecode(b *testing.B) {
	for _, name := range benchNames {
		b.Run(name, func(b *testing.B) {
			dec := newDecoder(benchTopologies(b)[name])
			withoutFastPath(name, dec)
			evs := benchEvents(b, false)
			ts := time.UnixMilli(1_790_000_000_000)
			out := &Decoded{vals: make([]any, len(dec.index))} // reused, as stage one does
			loop(b, func(i int) {
				clear(out.vals)
				dec.decodeInto(out, "logs", evs[i%len(evs)], ts)
			})
		})
	}
}

// BenchmarkProcess: the whole per-record path of the example topology,
// decode + route + output records (engine.process), one goroutine.
func BenchmarkProcess(b *testing.B) {
	for _, name := range benchNames {
		b.Run(name, func(b *testing.B) {
			eng := New(benchTopologies(b)[name], benchOptions(name)...)
			withoutFastPath(name, eng.dec)
			evs := benchEvents(b, false)
			recs := make([]*kgo.Record, len(evs))
			for i, v := range evs {
				recs[i] = &kgo.Record{Topic: "logs", Partition: int32(i % 6), Offset: int64(i), Key: []byte("e-" + strconv.Itoa(i)), Value: v, Timestamp: time.UnixMilli(1_790_000_000_000)}
			}
			tally := metrics.NewTally()
			loop(b, func(i int) { eng.Process(recs[i%len(recs)], tally) })
			if tally.Records() != b.N {
				b.Fatalf("tally covers %d of %d records", tally.Records(), b.N)
			}
			if name == "w1-topic" && len(tally.ComputedTopics) != 4 {
				b.Fatalf("computed topics %v, want 4", tally.ComputedTopics)
			}
		})
	}
}

// extracted is what every extraction strategy below must produce from a
// log event: the two fields the example's routes read and the event time.
type extracted struct {
	level, service string
	ts             int64
}

// Extraction strategies, compared on valid events only (the common case):
// each validates the whole value and reads level, service and ts.
var extractors = []struct {
	name string
	fn   func([]byte) (extracted, bool)
}{
	// The decoder's way: a UTF-8 check, gjson's validity scan, one pass
	// over the top-level keys.
	{"gjson-valid+foreach", func(v []byte) (extracted, bool) {
		var e extracted
		if !utf8.Valid(v) || !gjson.ValidBytes(v) {
			return e, false
		}
		gjson.ParseBytes(v).ForEach(func(k, r gjson.Result) bool {
			switch k.Str {
			case "level":
				e.level = r.Str
			case "service":
				e.service = r.Str
			case "ts":
				e.ts = r.Int()
			}
			return true
		})
		return e, true
	}},
	{"encoding-json-map", func(v []byte) (extracted, bool) {
		var m map[string]any
		if json.Unmarshal(v, &m) != nil {
			return extracted{}, false
		}
		return fromMap(m), true
	}},
	// UseNumber: what exact int64 IDs need from encoding/json.
	{"encoding-json-map-usenumber", func(v []byte) (extracted, bool) {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if d.Decode(&m) != nil {
			return extracted{}, false
		}
		return fromMap(m), true
	}},
	{"goccy-go-json-map", func(v []byte) (extracted, bool) {
		var m map[string]any
		if gojson.Unmarshal(v, &m) != nil {
			return extracted{}, false
		}
		return fromMap(m), true
	}},
	{"goccy-go-json-map-usenumber", func(v []byte) (extracted, bool) {
		var m map[string]any
		d := gojson.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if d.Decode(&m) != nil {
			return extracted{}, false
		}
		return fromMap(m), true
	}},
	// What JSON Schema validation costs on top: the validator's own
	// decode (encoding/json, UseNumber), then Validate.
	{"jsonschema-unmarshal", func(v []byte) (extracted, bool) {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
		if err != nil {
			return extracted{}, false
		}
		m, _ := inst.(map[string]any)
		return fromMap(m), true
	}},
}

func fromMap(m map[string]any) extracted {
	e := extracted{}
	e.level, _ = m["level"].(string)
	e.service, _ = m["service"].(string)
	switch ts := m["ts"].(type) {
	case float64:
		e.ts = int64(ts)
	case json.Number: // goccy's Number is the same type
		e.ts, _ = ts.Int64()
	}
	return e
}

// BenchmarkExtract compares the decoder's extraction with a full decode
// into map[string]any by encoding/json and goccy/go-json.
func BenchmarkExtract(b *testing.B) {
	evs := benchEvents(b, true)
	want, _ := extractors[0].fn(evs[0])
	for _, x := range extractors {
		b.Run(x.name, func(b *testing.B) {
			if got, ok := x.fn(evs[0]); !ok || got != want {
				b.Fatalf("%s extracted %+v, want %+v", x.name, got, want)
			}
			b.SetBytes(int64(len(evs[0])))
			loop(b, func(i int) { x.fn(evs[i%len(evs)]) })
		})
	}
	b.Run("jsonschema-validate-only", func(b *testing.B) {
		s := benchTopologies(b)["schema"].Inputs[0].Schema
		insts := make([]any, len(evs))
		for i, v := range evs {
			insts[i], _ = jsonschema.UnmarshalJSON(bytes.NewReader(v))
		}
		loop(b, func(i int) {
			if err := s.Validate(insts[i%len(insts)]); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// BenchmarkFormat compares one projected route written as json and as
// connect-json (the same five fields, with the Connect envelope): the
// price of a schema-carrying value per record.
func BenchmarkFormat(b *testing.B) {
	for _, format := range []string{config.OutputJSON, config.OutputConnectJSON} {
		b.Run(format, func(b *testing.B) {
			top := topo(b, "routes:\n  - name: out\n    topic: out\n    format: "+format+`
    project:
      id: string(id)
      level: string(level)
      service: string(service)
      latency: float(latency_ms ?? 0)
      slow: (latency_ms ?? 0) > 100
`, "routing: {default: out}\n", "inputs: [{topic: logs}]\n")
			eng := New(top)
			evs := benchEvents(b, true)
			recs := make([]*kgo.Record, len(evs))
			for i, v := range evs {
				recs[i] = &kgo.Record{Topic: "logs", Offset: int64(i), Value: v, Timestamp: time.UnixMilli(1_790_000_000_000)}
			}
			tally := metrics.NewTally()
			loop(b, func(i int) { eng.Process(recs[i%len(recs)], tally) })
			if tally.Routed != b.N {
				b.Fatalf("routed %d of %d records (dirty %v)", tally.Routed, b.N, tally.Dirty)
			}
		})
	}
}
