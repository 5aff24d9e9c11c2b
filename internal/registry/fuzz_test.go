package registry

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/wire"
)

const avroNode = `{"type":"record","name":"Node","fields":[
 {"name":"v","type":"long"},
 {"name":"next","type":["null","Node"]},
 {"name":"kids","type":{"type":"array","items":"Node"}},
 {"name":"m","type":{"type":"map","values":"string"}},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":30,"scale":4}}]}`

const protoTree = `syntax = "proto3"; message Tree { repeated Tree kids = 1; int64 v = 2; map<int32, Tree> m = 3; }`

// Schema ids of the fuzz registry.
const (
	fuzzAvroNode  = 1
	fuzzAvroAll   = 2
	fuzzProtoShop = 3
	fuzzProtoTree = 4
	fuzzJSON      = 5
)

func fuzzRegistry(t testing.TB) *Registry {
	m := newMem()
	m.add(fuzzAvroNode, sr.Schema{Schema: avroNode, Type: sr.TypeAvro})
	m.add(fuzzAvroAll, sr.Schema{Schema: avroAll, Type: sr.TypeAvro})
	m.addVersion("common", 1, sr.Schema{Schema: protoCommon, Type: sr.TypeProtobuf})
	m.add(fuzzProtoShop, sr.Schema{Schema: protoOrders, Type: sr.TypeProtobuf,
		References: []sr.SchemaReference{{Name: "common.proto", Subject: "common", Version: 1}}})
	m.add(fuzzProtoTree, sr.Schema{Schema: protoTree, Type: sr.TypeProtobuf})
	m.addVersion("address", 1, sr.Schema{Schema: jsonAddr, Type: sr.TypeJSON})
	m.add(fuzzJSON, sr.Schema{Schema: jsonOrder, Type: sr.TypeJSON,
		References: []sr.SchemaReference{{Name: "address.json", Subject: "address", Version: 1}}})
	return newRegistry(t, m)
}

// avroDeep is a Node chain depth deep (next: the Node branch).
func avroDeep(depth int) []byte {
	var b []byte
	for range depth {
		b = append(b, 0x00, 0x02) // v 0, next: branch 1
	}
	b = append(b, 0x00, 0x00, 0x00, 0x00, 0x00) // v, next null, kids, m, dec
	for range depth {
		b = append(b, 0x00, 0x00, 0x00) // kids, m, dec of each level
	}
	return b
}

// protoDeep is a Tree nested depth deep through kids.
func protoDeep(depth int) []byte {
	var b []byte
	for range depth {
		b = append(binary.AppendUvarint([]byte{0x0a}, uint64(len(b))), b...)
	}
	return b
}

// checkDecode: a value decodes or is a record error; never retryable
// (the fuzz registry always answers), never a panic.
func checkDecode(t *testing.T, d *Decoder, value []byte) {
	v, err := d.Decode(context.Background(), value)
	if err != nil {
		var re *RecordError
		if !errors.As(err, &re) || re.Reason == "" || re.Stage == "" || re.Err == nil {
			t.Fatalf("not a record error: %T %v", err, err)
		}
		return
	}
	if v.Fields == nil {
		t.Fatal("decoded with nil fields")
	}
	_, _ = v.EventTime("ts", TimeEpochMillis)
	_, _ = v.EventTime("created", TimeRFC3339)
}

func hostileSeeds(f *testing.F, id int, index []int, good []byte) {
	f.Add(frame(f, id, index, good))
	f.Add(frame(f, id, index, good)[:len(good)/2+5])
	f.Add(append([]byte{1}, frame(f, id, index, good)[1:]...))
	f.Add(frame(f, 999, index, good))
	f.Add([]byte{0, 0, 0})
	f.Add(frame(f, id, nil, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}))
	f.Add(frame(f, id, nil, []byte{0xfe, 0xff, 0xff, 0xff, 0x0f, 0x01}))
}

func FuzzDecodeAvro(f *testing.F) {
	r := fuzzRegistry(f)
	d := newDecoder(f, r, Avro)
	hostileSeeds(f, fuzzAvroAll, nil, avroEncode(f, avroAll, avroAllInput()))
	hostileSeeds(f, fuzzAvroNode, nil, avroDeep(3))
	f.Add(frame(f, fuzzAvroNode, nil, avroDeep(2000)))
	f.Add(frame(f, fuzzProtoShop, nil, []byte{0}))
	f.Fuzz(func(t *testing.T, value []byte) { checkDecode(t, d, value) })
}

func FuzzDecodeProtobuf(f *testing.F) {
	r := fuzzRegistry(f)
	d := newDecoder(f, r, Protobuf)
	hostileSeeds(f, fuzzProtoTree, []int{0}, protoDeep(3))
	f.Add(frame(f, fuzzProtoTree, []int{0}, protoDeep(3000)))
	f.Add(frame(f, fuzzProtoShop, []int{1}, []byte{0x08, 0x96, 0x01, 0x1a, 0x02, 0x08, 0x01}))
	f.Add(frame(f, fuzzProtoShop, []int{1, 0}, []byte{0x0a, 0x01, 'x'}))
	f.Fuzz(func(t *testing.T, value []byte) { checkDecode(t, d, value) })
}

func FuzzDecodeJSONSchema(f *testing.F) {
	r := fuzzRegistry(f)
	d := newDecoder(f, r, JSONSchema)
	hostileSeeds(f, fuzzJSON, nil, []byte(`{"id":1,"home":{"city":"x"},"tags":["a"]}`))
	f.Add(frame(f, fuzzJSON, nil, []byte(strings.Repeat("[", 20000))))
	f.Add(frame(f, fuzzJSON, nil, []byte(`{"id":1,"x":`+strings.Repeat(`{"a":`, 5000)+`1`+strings.Repeat("}", 5000)+`}`)))
	f.Fuzz(func(t *testing.T, value []byte) { checkDecode(t, d, value) })
}

// TestDeepNesting: values nested past the bound are record errors, a
// reasonable depth decodes.
func TestDeepNesting(t *testing.T) {
	r := fuzzRegistry(t)
	avroD, protoD := newDecoder(t, r, Avro), newDecoder(t, r, Protobuf)
	if v, err := avroD.Decode(context.Background(), frame(t, fuzzAvroNode, nil, avroDeep(200))); err != nil || v.Fields["next"] == nil {
		t.Fatalf("200 deep: %v %v", v, err)
	}
	_, err := avroD.Decode(context.Background(), frame(t, fuzzAvroNode, nil, avroDeep(5000)))
	if re := recordErr(t, err, wire.ReasonAvroDecode); !strings.Contains(re.Error(), "deeper than") {
		t.Fatalf("%v", re)
	}
	if _, err := protoD.Decode(context.Background(), frame(t, fuzzProtoTree, []int{0}, protoDeep(200))); err != nil {
		t.Fatalf("200 deep: %v", err)
	}
	_, err = protoD.Decode(context.Background(), frame(t, fuzzProtoTree, []int{0}, protoDeep(5000)))
	recordErr(t, err, wire.ReasonProtobufDecode)
}

// TestAvroHostileCountsAllocateLittle: nested arrays declaring a million
// items each in 200 bytes (hamba alone allocated 610 MB for them) are
// refused before anything is allocated for them.
func TestAvroHostileCountsAllocateLittle(t *testing.T) {
	d := newDecoder(t, fuzzRegistry(t), Avro)
	var b []byte
	for range 40 {
		b = append(b, 0x00, 0x00, 0x80, 0x89, 0x7a) // v 0, next null, kids: 1,000,000 items
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := d.Decode(context.Background(), frame(t, fuzzAvroNode, nil, b))
	runtime.ReadMemStats(&after)
	if re := recordErr(t, err, wire.ReasonAvroDecode); !strings.Contains(re.Error(), "1000000 items") {
		t.Fatalf("%v", re)
	}
	if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 8 {
		t.Fatalf("a 200-byte record allocated %d MB", mb)
	}
	// A zero-size item count beyond the payload: refused, at once.
	_, err = d.Decode(context.Background(), frame(t, fuzzAvroNode, nil, []byte{0x00, 0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}))
	recordErr(t, err, wire.ReasonAvroDecode)
}
