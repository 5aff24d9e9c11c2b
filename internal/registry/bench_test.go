package registry

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The per-record decode cost of each format on a small order record
// (schema cached). Run only with -benchtime 1x on a shared machine.

const benchAvro = `{"type":"record","name":"Order","fields":[
 {"name":"id","type":"long"},{"name":"customer","type":"string"},{"name":"amount","type":"double"},
 {"name":"status","type":{"type":"enum","name":"S","symbols":["NEW","PAID"]}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"note","type":["null","string"]}]}`

const benchProto = `syntax = "proto3"; import "google/protobuf/timestamp.proto";
message Order { int64 id = 1; string customer = 2; double amount = 3; enum S { NEW = 0; PAID = 1; } S status = 4;
 google.protobuf.Timestamp ts = 5; optional string note = 6; }`

const benchJSON = `{"type":"object","properties":{"id":{"type":"integer"},"customer":{"type":"string"},"amount":{"type":"number"},
 "status":{"enum":["NEW","PAID"]},"ts":{"type":"integer"},"note":{"type":["string","null"]}},"required":["id","ts"]}`

func benchDecode(b *testing.B, d *Decoder, value []byte) {
	b.Helper()
	ctx := context.Background()
	if _, err := d.Decode(ctx, value); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(value)))
	for b.Loop() {
		if _, err := d.Decode(ctx, value); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeAvro(b *testing.B) {
	m := newMem()
	m.add(1, sr.Schema{Schema: benchAvro, Type: sr.TypeAvro})
	payload := avroEncode(b, benchAvro, map[string]any{"id": int64(123456789), "customer": "c-42", "amount": 19.5,
		"status": "PAID", "ts": int64(1790000000123), "note": map[string]any{"string": "gift"}})
	benchDecode(b, newDecoder(b, newRegistry(b, m), Avro), frame(b, 1, nil, payload))
}

func BenchmarkDecodeProtobuf(b *testing.B) {
	m := newMem()
	m.add(1, sr.Schema{Schema: benchProto, Type: sr.TypeProtobuf})
	c, err := compileProto(context.Background(), 1, benchProto, nil)
	if err != nil {
		b.Fatal(err)
	}
	md, _ := c.message([]int{0})
	msg := dynamicpb.NewMessage(md)
	set(msg, "id", protoreflect.ValueOfInt64(123456789))
	set(msg, "customer", protoreflect.ValueOfString("c-42"))
	set(msg, "amount", protoreflect.ValueOfFloat64(19.5))
	set(msg, "status", protoreflect.ValueOfEnum(1))
	set(sub(msg, "ts"), "seconds", protoreflect.ValueOfInt64(1790000000))
	set(msg, "note", protoreflect.ValueOfString("gift"))
	payload, err := proto.Marshal(msg)
	if err != nil {
		b.Fatal(err)
	}
	benchDecode(b, newDecoder(b, newRegistry(b, m), Protobuf), frame(b, 1, []int{0}, payload))
}

func BenchmarkDecodeJSON(b *testing.B) {
	m := newMem()
	m.add(1, sr.Schema{Schema: benchJSON, Type: sr.TypeJSON})
	payload := []byte(`{"id":123456789,"customer":"c-42","amount":19.5,"status":"PAID","ts":1790000000123,"note":"gift"}`)
	benchDecode(b, newDecoder(b, newRegistry(b, m), JSONSchema), frame(b, 1, nil, payload))
}

// BenchmarkDecodeLogEvent: decode alone of the log event
// stageone.BenchmarkProcessFormats routes (examples/schemas/
// log-event.avsc and its Protobuf equivalent), schema cached, so the
// routing share of that benchmark is its figure minus this one.
func BenchmarkDecodeLogEvent(b *testing.B) {
	avsc, err := os.ReadFile("../../examples/schemas/log-event.avsc")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("avro", func(b *testing.B) {
		m := newMem()
		m.add(1, sr.Schema{Schema: string(avsc)})
		payload := avroEncode(b, string(avsc), map[string]any{"id": "e-1", "ts": time.UnixMilli(1_790_000_000_000).UTC(), "level": "ERROR",
			"service": "checkout", "host": "checkout-3.prod.internal", "message": "payment authorised", "user_id": int64(41234),
			"latency_ms": 12.5, "trace_id": map[string]any{"string": "00000009c3b1b1f10000019e8f1c2a40"}, "region": "eu-west-1"})
		benchDecode(b, newDecoder(b, newRegistry(b, m), Avro), frame(b, 1, nil, payload))
	})
	b.Run("protobuf", func(b *testing.B) {
		const text = `syntax = "proto3";
message LogEvent {
  enum Level { DEBUG = 0; INFO = 1; WARN = 2; ERROR = 3; }
  string id = 1; int64 ts = 2; Level level = 3; string service = 4; string host = 5;
  string message = 6; int64 user_id = 7; double latency_ms = 8; optional string trace_id = 9; string region = 10;
}`
		m := newMem()
		m.add(1, sr.Schema{Schema: text, Type: sr.TypeProtobuf})
		c, err := compileProto(context.Background(), 1, text, nil)
		if err != nil {
			b.Fatal(err)
		}
		md, _ := c.message([]int{0})
		msg := dynamicpb.NewMessage(md)
		for name, v := range map[string]string{"id": "e-1", "service": "checkout", "host": "checkout-3.prod.internal",
			"message": "payment authorised", "trace_id": "00000009c3b1b1f10000019e8f1c2a40", "region": "eu-west-1"} {
			set(msg, name, protoreflect.ValueOfString(v))
		}
		set(msg, "ts", protoreflect.ValueOfInt64(1_790_000_000_000))
		set(msg, "level", protoreflect.ValueOfEnum(3))
		set(msg, "user_id", protoreflect.ValueOfInt64(41234))
		set(msg, "latency_ms", protoreflect.ValueOfFloat64(12.5))
		payload, err := proto.Marshal(msg)
		if err != nil {
			b.Fatal(err)
		}
		benchDecode(b, newDecoder(b, newRegistry(b, m), Protobuf), frame(b, 1, []int{0}, payload))
	})
}
