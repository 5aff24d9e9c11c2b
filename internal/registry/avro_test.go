package registry

import (
	"context"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/wire"
)

const avroAll = `{"type":"record","name":"Order","namespace":"shop","fields":[
 {"name":"id","type":"long"},
 {"name":"qty","type":"int"},
 {"name":"price","type":"double"},
 {"name":"ratio","type":"float"},
 {"name":"name","type":"string"},
 {"name":"paid","type":"boolean"},
 {"name":"blob","type":"bytes"},
 {"name":"code","type":{"type":"fixed","name":"Code","size":3}},
 {"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","SHIPPED"]}},
 {"name":"note","type":["null","string"]},
 {"name":"alt","type":["string","long"]},
 {"name":"customer","type":["null",{"type":"record","name":"Customer","fields":[
   {"name":"cid","type":"long"},
   {"name":"since","type":{"type":"long","logicalType":"timestamp-millis"}}]}]},
 {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
   {"name":"sku","type":"string"},{"name":"n","type":"int"}]}}},
 {"name":"tags","type":{"type":"map","values":"long"}},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"ts_us","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"local","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"tod","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tod_us","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"whole","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"half","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
 {"name":"famount","type":{"type":"fixed","name":"Amt","size":8,"logicalType":"decimal","precision":12,"scale":3}},
 {"name":"uid","type":{"type":"string","logicalType":"uuid"}},
 {"name":"maybe_ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}]},
 {"name":"maybe_arr","type":["null",{"type":"array","items":"int"}]}
]}`

func avroAllInput() map[string]any {
	return map[string]any{
		"id": int64(9007199254740993), "qty": 3, "price": 2.5, "ratio": float32(0.25), "name": "ß", "paid": true,
		"blob": []byte{0, 1, 2}, "code": [3]byte{'a', 'b', 'c'}, "status": "PAID",
		"note": "hi", "alt": int64(42),
		"customer":  map[string]any{"shop.Customer": map[string]any{"cid": int64(7), "since": time.UnixMilli(1700000000123).UTC()}},
		"lines":     []any{map[string]any{"sku": "x", "n": 1}, map[string]any{"sku": "y", "n": 2}},
		"tags":      map[string]any{"a": int64(1)},
		"ts":        time.UnixMilli(1790000000123).UTC(),
		"ts_us":     time.UnixMicro(1790000000123456).UTC(),
		"local":     localWall(time.UnixMilli(1790000000999)),
		"day":       time.Unix(20000*86400, 0).UTC(),
		"tod":       1500 * time.Millisecond,
		"tod_us":    1500 * time.Microsecond,
		"amount":    big.NewRat(1234, 100),
		"whole":     big.NewRat(100, 1),
		"half":      big.NewRat(1, 2),
		"famount":   big.NewRat(-5, 1000),
		"uid":       "7e6f0c8a-3a0a-4a51-9f34-2d3e8c1d6b1a",
		"maybe_ts":  time.UnixMilli(-1).UTC(),
		"maybe_arr": nil,
	}
}

// localWall is t's UTC wall clock in time.Local: what hamba's encoder
// writes as the stored local-timestamp value t (whatever TZ says).
func localWall(t time.Time) time.Time {
	u := t.UTC()
	return time.Date(u.Year(), u.Month(), u.Day(), u.Hour(), u.Minute(), u.Second(), u.Nanosecond(), time.Local)
}

func avroAllWant() map[string]any {
	return map[string]any{
		"id": 9007199254740993, "qty": 3, "price": 2.5, "ratio": 0.25, "name": "ß", "paid": true,
		"blob": "AAEC", "code": "YWJj", "status": "PAID",
		"note": "hi", "alt": 42,
		"customer":  map[string]any{"cid": 7, "since": 1700000000123},
		"lines":     []any{map[string]any{"sku": "x", "n": 1}, map[string]any{"sku": "y", "n": 2}},
		"tags":      map[string]any{"a": 1},
		"ts":        1790000000123,
		"ts_us":     1790000000123,
		"local":     1790000000999,
		"day":       20000,
		"tod":       1500,
		"tod_us":    1500,
		"amount":    "12.34",
		"whole":     100,
		"half":      0.5,
		"famount":   "-0.005",
		"uid":       "7e6f0c8a-3a0a-4a51-9f34-2d3e8c1d6b1a",
		"maybe_ts":  -1,
		"maybe_arr": nil,
	}
}

func TestAvroValueModel(t *testing.T) {
	f := newFake(t)
	f.SeedSchema("orders-value", 1, 11, sr.Schema{Schema: avroAll, Type: sr.TypeAvro})
	d := newDecoder(t, newRegistry(t, f.client(t)), Avro)
	v, err := d.Decode(context.Background(), frame(t, 11, nil, avroEncode(t, avroAll, avroAllInput())))
	if err != nil {
		t.Fatal(err)
	}
	if v.SchemaID != 11 {
		t.Fatalf("schema id %d", v.SchemaID)
	}
	want := avroAllWant()
	for k, w := range want {
		if g := v.Fields[k]; !reflect.DeepEqual(g, w) {
			t.Errorf("field %s = %#v (%T), want %#v (%T)", k, g, g, w, w)
		}
	}
	if len(v.Fields) != len(want) {
		t.Errorf("%d fields, want %d", len(v.Fields), len(want))
	}
	// Event time: a logical timestamp reads as epoch ms whatever the
	// format; a nested one through a union too; a date as its midnight.
	for _, c := range []struct {
		field, format string
		want          int64
	}{
		{"ts", TimeRFC3339, 1790000000123},
		{"ts_us", TimeEpochSecs, 1790000000123},
		{"customer.since", TimeEpochMillis, 1700000000123},
		{"day", TimeEpochSecs, 20000 * 86400000},
		{"id", TimeEpochMillis, 9007199254740993}, // beyond year 9999
	} {
		got, rerr := v.EventTime(c.field, c.format)
		if c.field == "id" {
			if rerr == nil || rerr.Reason != wire.ReasonBadTime || rerr.Stage != wire.StageEventTime {
				t.Errorf("event time of %s: %v, want bad_event_time", c.field, rerr)
			}
			continue
		}
		if rerr != nil || got != c.want {
			t.Errorf("event time of %s (%s) = %d, %v; want %d", c.field, c.format, got, rerr, c.want)
		}
	}
}

func TestAvroUnionsOfNamedTypes(t *testing.T) {
	const schema = `{"type":"record","name":"E","fields":[
	 {"name":"u","type":["null","string",{"type":"record","name":"A","fields":[{"name":"a","type":"long"}]},
	   {"type":"enum","name":"K","symbols":["X","Y"]},{"type":"map","values":"int"},
	   {"type":"long","logicalType":"local-timestamp-micros"}]}]}`
	f := newFake(t)
	f.SeedSchema("e-value", 1, 3, sr.Schema{Schema: schema, Type: sr.TypeAvro})
	d := newDecoder(t, newRegistry(t, f.client(t)), Avro)
	for _, c := range []struct {
		in   any
		want any
	}{
		{nil, nil},
		{map[string]any{"string": "s"}, "s"},
		{map[string]any{"A": map[string]any{"a": int64(5)}}, map[string]any{"a": 5}},
		{map[string]any{"K": "Y"}, "Y"},
		{map[string]any{"map": map[string]any{"k": 1}}, map[string]any{"k": 1}},
		{map[string]any{"long.local-timestamp-micros": localWall(time.UnixMicro(1790000000123999))}, 1790000000123},
	} {
		v, err := d.Decode(context.Background(), frame(t, 3, nil, avroEncode(t, schema, map[string]any{"u": c.in})))
		if err != nil {
			t.Fatalf("%v: %v", c.in, err)
		}
		if !reflect.DeepEqual(v.Fields["u"], c.want) {
			t.Errorf("union %v decoded as %#v, want %#v", c.in, v.Fields["u"], c.want)
		}
	}
}

// TestAvroTwoVersions: a stream holding records of two schema versions;
// each decodes with its own writer schema.
func TestAvroTwoVersions(t *testing.T) {
	const v1 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`
	const v2 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"email","type":["null","string"],"default":null},{"name":"name","type":"string"}]}`
	f := newFake(t)
	f.SeedSchema("users-value", 1, 21, sr.Schema{Schema: v1, Type: sr.TypeAvro})
	f.SeedSchema("users-value", 2, 22, sr.Schema{Schema: v2, Type: sr.TypeAvro})
	d := newDecoder(t, newRegistry(t, f.client(t)), Avro)
	stream := [][]byte{
		frame(t, 21, nil, avroEncode(t, v1, map[string]any{"id": int64(1), "name": "a"})),
		frame(t, 22, nil, avroEncode(t, v2, map[string]any{"id": int64(2), "email": "b@x", "name": "b"})),
		frame(t, 21, nil, avroEncode(t, v1, map[string]any{"id": int64(3), "name": "c"})),
	}
	want := []map[string]any{{"id": 1, "name": "a"}, {"id": 2, "email": "b@x", "name": "b"}, {"id": 3, "name": "c"}}
	for i, rec := range stream {
		v, err := d.Decode(context.Background(), rec)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !reflect.DeepEqual(v.Fields, want[i]) {
			t.Errorf("record %d = %v, want %v", i, v.Fields, want[i])
		}
	}
	if n := f.byID.Load(); n != 2 {
		t.Errorf("%d schema fetches for 2 ids, want 2", n)
	}
	// A v2 payload framed with the v1 id does not decode silently.
	bad := frame(t, 21, nil, avroEncode(t, v2, map[string]any{"id": int64(2), "email": "b@x", "name": "b"}))
	_, err := d.Decode(context.Background(), bad)
	recordErr(t, err, wire.ReasonAvroDecode)
}

func TestAvroHostilePayloads(t *testing.T) {
	const schema = `{"type":"record","name":"R","fields":[{"name":"s","type":"string"},{"name":"a","type":{"type":"array","items":"long"}}]}`
	m := newMem()
	m.add(1, sr.Schema{Schema: schema, Type: sr.TypeAvro})
	d := newDecoder(t, newRegistry(t, m), Avro)
	good := avroEncode(t, schema, map[string]any{"s": "hello", "a": []any{int64(1), int64(2)}})
	for name, payload := range map[string][]byte{
		"truncated":      good[:len(good)-2],
		"trailing":       append(append([]byte{}, good...), 9),
		"huge string":    {0xfe, 0xff, 0xff, 0xff, 0x0f},
		"huge array":     {0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"negative array": {0x00, 0x01, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"empty":          {},
	} {
		_, err := d.Decode(context.Background(), frame(t, 1, nil, payload))
		re := recordErr(t, err, wire.ReasonAvroDecode)
		if re.SchemaID != 1 || re.Stage != wire.StageDecode {
			t.Errorf("%s: %+v", name, re)
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestAvroReferences(t *testing.T) {
	const addr = `{"type":"record","name":"Address","namespace":"shop","fields":[{"name":"city","type":"string"}]}`
	const person = `{"type":"record","name":"Person","namespace":"shop","fields":[{"name":"home","type":"shop.Address"}]}`
	f := newFake(t)
	f.SeedSchema("address", 1, 30, sr.Schema{Schema: addr, Type: sr.TypeAvro})
	f.SeedSchema("person-value", 1, 31, sr.Schema{Schema: person, Type: sr.TypeAvro,
		References: []sr.SchemaReference{{Name: "shop.Address", Subject: "address", Version: 1}}})
	d := newDecoder(t, newRegistry(t, f.client(t)), Avro)
	full := `{"type":"record","name":"Person","namespace":"shop","fields":[{"name":"home","type":` + addr + `}]}`
	v, err := d.Decode(context.Background(), frame(t, 31, nil, avroEncode(t, full, map[string]any{"home": map[string]any{"city": "Oslo"}})))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := v.Get("home.city"); got != "Oslo" {
		t.Fatalf("home.city = %v", got)
	}
}
