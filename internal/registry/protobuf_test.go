package registry

import (
	"context"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sidestream/sidestream/internal/wire"
)

const protoCommon = `syntax = "proto3";
package common;
message Money { string currency = 1; int64 units = 2; }
`

const protoOrders = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "common.proto";

message Ping { string id = 1; }

message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; uint32 n = 2; }
  int64 id = 1;
  Status status = 2;
  google.protobuf.Timestamp created = 3;
  repeated Line lines = 4;
  map<string, int64> tags = 5;
  bytes blob = 6;
  double price = 7;
  common.Money total = 8;
  optional string note = 9;
  oneof pay { string card = 10; string iban = 11; }
  google.protobuf.Int64Value big = 12;
  uint64 huge = 13;
  sint32 delta = 14;
  float ratio = 15;
  bool gift = 16;
  Meta meta = 17;
}

message Meta { google.protobuf.Timestamp at = 1; }
`

func protoRefs() []reference {
	return []reference{{name: "common.proto", Schema: sr.Schema{Schema: protoCommon, Type: sr.TypeProtobuf}}}
}

func protoSetup(t testing.TB) (*Decoder, *protoCodec) {
	t.Helper()
	f := newFake(t)
	f.SeedSchema("common", 1, 40, sr.Schema{Schema: protoCommon, Type: sr.TypeProtobuf})
	f.SeedSchema("orders-value", 1, 41, sr.Schema{Schema: protoOrders, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "common.proto", Subject: "common", Version: 1}}})
	c, err := compileProto(context.Background(), 41, protoOrders, protoRefs())
	if err != nil {
		t.Fatal(err)
	}
	return newDecoder(t, newRegistry(t, f.client(t)), Protobuf), c
}

// set assigns a field of a dynamic message by name (tests only).
func set(m *dynamicpb.Message, name string, v protoreflect.Value) {
	m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), v)
}

func sub(m *dynamicpb.Message, name string) *dynamicpb.Message {
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	return m.Mutable(fd).Message().Interface().(*dynamicpb.Message)
}

func TestProtobufValueModel(t *testing.T) {
	d, c := protoSetup(t)
	md, _ := c.message([]int{1})
	m := dynamicpb.NewMessage(md)
	set(m, "id", protoreflect.ValueOfInt64(9007199254740993))
	set(m, "status", protoreflect.ValueOfEnum(1))
	ts := sub(m, "created")
	set(ts, "seconds", protoreflect.ValueOfInt64(1790000000))
	set(ts, "nanos", protoreflect.ValueOfInt32(123999999))
	lines := m.Mutable(md.Fields().ByName("lines")).List()
	l := dynamicpb.NewMessage(md.Messages().ByName("Line"))
	set(l, "sku", protoreflect.ValueOfString("x"))
	set(l, "n", protoreflect.ValueOfUint32(2))
	lines.Append(protoreflect.ValueOfMessage(l))
	m.Mutable(md.Fields().ByName("tags")).Map().Set(protoreflect.ValueOfString("a").MapKey(), protoreflect.ValueOfInt64(-1))
	set(m, "blob", protoreflect.ValueOfBytes([]byte{0, 1, 2}))
	set(m, "price", protoreflect.ValueOfFloat64(2.5))
	total := sub(m, "total")
	set(total, "currency", protoreflect.ValueOfString("EUR"))
	set(total, "units", protoreflect.ValueOfInt64(12))
	set(m, "iban", protoreflect.ValueOfString("NO93"))
	set(sub(m, "big"), "value", protoreflect.ValueOfInt64(1<<62))
	set(m, "huge", protoreflect.ValueOfUint64(1<<63))
	set(m, "delta", protoreflect.ValueOfInt32(-3))
	set(m, "ratio", protoreflect.ValueOfFloat32(0.25))
	set(sub(sub(m, "meta"), "at"), "seconds", protoreflect.ValueOfInt64(-1))
	payload, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.Decode(context.Background(), frame(t, 41, []int{1}, payload))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": 9007199254740993, "status": "PAID", "created": 1790000000123,
		"lines": []any{map[string]any{"sku": "x", "n": 2}}, "tags": map[string]any{"a": -1},
		"blob": "AAEC", "price": 2.5, "total": map[string]any{"currency": "EUR", "units": 12},
		"iban": "NO93", "big": 1 << 62, "huge": float64(1 << 63), "delta": -3, "ratio": 0.25, "gift": false,
		"meta": map[string]any{"at": -1000},
	}
	if !reflect.DeepEqual(v.Fields, want) {
		for k := range want {
			if !reflect.DeepEqual(v.Fields[k], want[k]) {
				t.Errorf("%s = %#v, want %#v", k, v.Fields[k], want[k])
			}
		}
		t.Fatalf("fields %v", v.Fields)
	}
	if ms, re := v.EventTime("created", TimeRFC3339); re != nil || ms != 1790000000123 {
		t.Errorf("event time of a Timestamp: %d %v", ms, re)
	}
	if ms, re := v.EventTime("meta.at", TimeEpochSecs); re != nil || ms != -1000 {
		t.Errorf("event time of a nested Timestamp: %d %v", ms, re)
	}
}

func TestProtobufMessageIndexes(t *testing.T) {
	d, c := protoSetup(t)
	ping, _ := c.message([]int{0})
	m := dynamicpb.NewMessage(ping)
	set(m, "id", protoreflect.ValueOfString("p1"))
	payload, _ := proto.Marshal(m)
	// [0]: the single-0 shortcut.
	if b := frame(t, 41, []int{0}, payload); b[5] != 0 {
		t.Fatalf("index [0] framed as %v, want the 0 shortcut", b[5:6])
	}
	v, err := d.Decode(context.Background(), frame(t, 41, []int{0}, payload))
	if err != nil || v.Fields["id"] != "p1" {
		t.Fatalf("Ping: %v %v", v, err)
	}
	// [1 0]: Order.Line.
	line, _ := c.message([]int{1, 0})
	lm := dynamicpb.NewMessage(line)
	set(lm, "sku", protoreflect.ValueOfString("s"))
	payload, _ = proto.Marshal(lm)
	v, err = d.Decode(context.Background(), frame(t, 41, []int{1, 0}, payload))
	if err != nil || v.Fields["sku"] != "s" || v.Fields["n"] != 0 {
		t.Fatalf("Order.Line: %v %v", v, err)
	}
	for name, value := range map[string][]byte{
		"index out of range":  frame(t, 41, []int{5}, payload),
		"nested out of range": frame(t, 41, []int{0, 0}, payload),
		"negative index":      frame(t, 41, []int{-1}, payload),
		"no index byte":       frame(t, 41, nil, nil),
		"huge index count":    frame(t, 41, nil, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}),
		"negative count":      frame(t, 41, nil, []byte{0x03}),
		"truncated index":     frame(t, 41, nil, []byte{0x04, 0x02}),
		"bad payload":         frame(t, 41, []int{1}, []byte{0x0a, 0xff}),
		"truncated message":   frame(t, 41, []int{1}, []byte{0x22, 0x05, 0x0a}),
		"group end":           frame(t, 41, []int{1}, []byte{0x0c}),
	} {
		_, err := d.Decode(context.Background(), value)
		re := recordErr(t, err, wire.ReasonProtobufDecode)
		t.Logf("%s: %v", name, re)
	}
}

func TestProtobufBadSchema(t *testing.T) {
	m := newMem()
	m.add(1, sr.Schema{Schema: `syntax = "proto3"; message M { int64 a = 1 }`, Type: sr.TypeProtobuf})
	m.add(2, sr.Schema{Schema: `syntax = "proto3"; import "missing.proto"; message M { int64 a = 1; }`, Type: sr.TypeProtobuf})
	d := newDecoder(t, newRegistry(t, m), Protobuf)
	for _, id := range []int{1, 2} {
		_, err := d.Decode(context.Background(), frame(t, id, []int{0}, nil))
		t.Logf("id %d: %v", id, recordErr(t, err, wire.ReasonProtobufDecode))
	}
}
