package registry_test

import (
	"context"
	"fmt"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sidestream/sidestream/internal/registry"
)

func ExampleDecoder() {
	const schema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"note","type":["null","string"]}]}`
	fake := srfake.New()
	defer fake.Close()
	fake.SeedSchema("orders-value", 1, 7, sr.Schema{Schema: schema, Type: sr.TypeAvro})

	cl, _ := sr.NewClient(sr.URLs(fake.URL()))
	reg, _ := registry.New(cl)
	dec, _ := registry.NewDecoder(reg, registry.Avro)

	// A record as a Confluent serializer writes it: 0, id 7, Avro.
	s := avro.MustParse(schema)
	payload, _ := avro.Marshal(s, map[string]any{"id": int64(42), "ts": int64(1790000000123), "note": map[string]any{"string": "gift"}})
	value, _ := sr.AppendEncode(nil, nil, &sr.ConfluentHeader{}, 7, nil, func(b []byte, _ any) ([]byte, error) { return append(b, payload...), nil })

	v, err := dec.Decode(context.Background(), value)
	if err != nil {
		fmt.Println(err)
		return
	}
	ts, _ := v.EventTime("ts", registry.TimeEpochMillis)
	fmt.Println(v.SchemaID, v.Fields["id"], v.Fields["note"], ts)

	_, err = dec.Decode(context.Background(), []byte(`{"id":42}`))
	fmt.Println(err)
	// Output:
	// 7 42 gift 1790000000123
	// decode: not_registry_framed: value starts with byte 0x7b, not the magic byte 0 (it looks like plain JSON); a schema registry frame (magic byte 0, a 4-byte schema id) is expected
}
