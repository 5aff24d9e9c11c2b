package stageone

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/bufbuild/protocompile"
	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/registry"
)

// BenchmarkProcessFormats: the per-record cost of decode + route of the
// same log event as JSON (no schema), Avro (examples/schemas/
// log-event.avsc), Protobuf (its equivalent message) and JSON Schema
// (examples/schemas/log-event.json) through Engine.Process, with one
// routing topology (logs-by-level's: three routes on level, the error
// route keyed by service, event time ts). The registry formats decode
// with the real registry.Decoder over an in-memory registry client whose
// schema is fetched once before the timer: the figure holds the cache hit
// (a map read under a read lock), never a registry request. Reports
// ns/op, B/op, allocs/op; the figures are taken on a quiet machine.

// benchRoutes are the topology's sections but the input (one a key, as
// topo takes them).
var benchRoutes = []string{"event_time: {field: ts, format: epoch_ms}\n", "routing: {match: first, default: main}\n", "routes:\n" +
	"  - {name: error, topic: logs.error, when: 'level == \"ERROR\"', key: service}\n" +
	"  - {name: warn, topic: logs.warn, when: 'level == \"WARN\"'}\n" +
	"  - {name: main, topic: logs.main, when: 'level == \"INFO\"'}\n"}

const benchLogProto = `syntax = "proto3";
message LogEvent {
  enum Level { DEBUG = 0; INFO = 1; WARN = 2; ERROR = 3; }
  string id = 1; int64 ts = 2; Level level = 3; string service = 4; string host = 5;
  string message = 6; int64 user_id = 7; double latency_ms = 8; optional string trace_id = 9; string region = 10;
}`

// benchLog is one log event, the same in every format.
type benchLog struct {
	id, level, service string
	ts                 int64
}

var benchLevels = []string{"ERROR", "WARN", "INFO", "DEBUG"}

func benchLogs() []benchLog {
	out := make([]benchLog, 64)
	for i := range out {
		out[i] = benchLog{id: "e-" + strconv.Itoa(i), level: benchLevels[i%len(benchLevels)], service: "checkout", ts: 1_790_000_000_000 + int64(i)}
	}
	return out
}

func (l benchLog) json() []byte {
	return fmt.Appendf(nil, `{"id":%q,"ts":%d,"level":%q,"service":%q,"host":"checkout-3.prod.internal","message":"payment authorised","user_id":41234,"latency_ms":12.5,"trace_id":"00000009c3b1b1f10000019e8f1c2a40","region":"eu-west-1"}`,
		l.id, l.ts, l.level, l.service)
}

func (l benchLog) avro(b *testing.B, s avro.Schema) []byte {
	p, err := avro.Marshal(s, map[string]any{"id": l.id, "ts": time.UnixMilli(l.ts).UTC(), "level": l.level, "service": l.service,
		"host": "checkout-3.prod.internal", "message": "payment authorised", "user_id": int64(41234), "latency_ms": 12.5,
		"trace_id": map[string]any{"string": "00000009c3b1b1f10000019e8f1c2a40"}, "region": "eu-west-1"})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func (l benchLog) proto(b *testing.B, md protoreflect.MessageDescriptor) []byte {
	m := dynamicpb.NewMessage(md)
	fs := md.Fields()
	str := func(name, v string) { m.Set(fs.ByName(protoreflect.Name(name)), protoreflect.ValueOfString(v)) }
	str("id", l.id)
	str("service", l.service)
	str("host", "checkout-3.prod.internal")
	str("message", "payment authorised")
	str("trace_id", "00000009c3b1b1f10000019e8f1c2a40")
	str("region", "eu-west-1")
	m.Set(fs.ByName("ts"), protoreflect.ValueOfInt64(l.ts))
	m.Set(fs.ByName("level"), protoreflect.ValueOfEnum(md.Enums().ByName("Level").Values().ByName(protoreflect.Name(l.level)).Number()))
	m.Set(fs.ByName("user_id"), protoreflect.ValueOfInt64(41234))
	m.Set(fs.ByName("latency_ms"), protoreflect.ValueOfFloat64(12.5))
	p, err := proto.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// memRegistry is a registry.Client holding schema id 1.
type memRegistry struct{ schema sr.Schema }

func (m memRegistry) SchemaByID(_ context.Context, id int) (sr.Schema, error) {
	if id != 1 {
		return sr.Schema{}, &sr.ResponseError{StatusCode: 404, Message: "schema not found"}
	}
	return m.schema, nil
}

func (memRegistry) SchemaByVersion(context.Context, string, int) (sr.SubjectSchema, error) {
	return sr.SubjectSchema{}, &sr.ResponseError{StatusCode: 404, Message: "subject not found"}
}

func benchRegistryDecoder(b *testing.B, s sr.Schema, f registry.Format) RegistryDecoder {
	reg, err := registry.New(memRegistry{schema: s})
	if err != nil {
		b.Fatal(err)
	}
	d, err := registry.NewDecoder(reg, f)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func benchFrame(b *testing.B, index []int, payload []byte) []byte {
	var h sr.ConfluentHeader
	v, err := h.AppendEncode(nil, 1, index)
	if err != nil {
		b.Fatal(err)
	}
	return append(v, payload...)
}

// benchFormat is one input format of the benchmark: its topology's input
// section, its decoder (none for JSON) and the events as it frames them.
type benchFormat struct {
	input  string
	dec    RegistryDecoder
	values [][]byte
}

func benchFormats(b *testing.B) map[string]benchFormat {
	logs := benchLogs()
	out := map[string]benchFormat{"json": {input: "inputs: [{topic: logs}]\n"}}
	avsc, err := os.ReadFile(examplesDir + "schemas/log-event.avsc")
	if err != nil {
		b.Fatal(err)
	}
	as, err := avro.ParseWithCache(string(avsc), "", &avro.SchemaCache{})
	if err != nil {
		b.Fatal(err)
	}
	fds, err := (&protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"log.proto": benchLogProto})})}).Compile(context.Background(), "log.proto")
	if err != nil {
		b.Fatal(err)
	}
	md := fds[0].Messages().Get(0)
	jsonSchema, err := os.ReadFile(examplesDir + "schemas/log-event.json")
	if err != nil {
		b.Fatal(err)
	}
	out["avro"] = benchFormat{input: "inputs: [{topic: logs, format: avro}]\n", dec: benchRegistryDecoder(b, sr.Schema{Schema: string(avsc)}, registry.Avro)}
	out["protobuf"] = benchFormat{input: "inputs: [{topic: logs, format: protobuf}]\n", dec: benchRegistryDecoder(b, sr.Schema{Schema: benchLogProto, Type: sr.TypeProtobuf}, registry.Protobuf)}
	out["json_schema"] = benchFormat{input: "inputs: [{topic: logs, format: json_schema}]\n", dec: benchRegistryDecoder(b, sr.Schema{Schema: string(jsonSchema), Type: sr.TypeJSON}, registry.JSONSchema)}
	for name, f := range out {
		for _, l := range logs {
			var v []byte
			switch name {
			case "json":
				v = l.json()
			case "avro":
				v = benchFrame(b, nil, l.avro(b, as))
			case "protobuf":
				v = benchFrame(b, []int{0}, l.proto(b, md))
			case "json_schema":
				v = benchFrame(b, nil, l.json())
			}
			f.values = append(f.values, v)
		}
		out[name] = f
	}
	return out
}

func BenchmarkProcessFormats(b *testing.B) {
	formats := benchFormats(b)
	for _, name := range []string{"json", "avro", "protobuf", "json_schema"} {
		b.Run(name, func(b *testing.B) {
			f := formats[name]
			var opts []Option
			if f.dec != nil {
				opts = append(opts, WithDecoders(map[string]RegistryDecoder{"logs": f.dec}))
			}
			eng := New(topo(b, append([]string{f.input}, benchRoutes...)...), opts...)
			recs := make([]*kgo.Record, len(f.values))
			size := 0
			for i, v := range f.values {
				recs[i] = &kgo.Record{Topic: "logs", Partition: int32(i % 6), Offset: int64(i), Key: []byte("e-" + strconv.Itoa(i)), Value: v, Timestamp: time.UnixMilli(1_790_000_000_000)}
				size += len(v)
			}
			b.SetBytes(int64(size / len(recs)))
			// Warm: the registry formats' schema is fetched and cached
			// here, outside the timed loop; every record must route.
			warm := metrics.NewTally()
			for _, r := range recs {
				eng.Process(r, warm)
			}
			if warm.Routed != len(recs) {
				b.Fatalf("%s: routed %d of %d records (dirty %v)", name, warm.Routed, len(recs), warm.Dirty)
			}
			tally := metrics.NewTally()
			loop(b, func(i int) { eng.Process(recs[i%len(recs)], tally) })
			if tally.Routed != b.N {
				b.Fatalf("%s: routed %d of %d records (dirty %v)", name, tally.Routed, b.N, tally.Dirty)
			}
		})
	}
}
