package registry

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/wire"
)

const jsonAddr = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

const jsonOrder = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "id": {"type": "integer"},
    "price": {"type": "number"},
    "home": {"$ref": "address.json"},
    "tags": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["id"]
}`

func jsonSetup(t testing.TB) *Decoder {
	t.Helper()
	f := newFake(t)
	f.SeedSchema("address", 1, 50, sr.Schema{Schema: jsonAddr, Type: sr.TypeJSON})
	f.SeedSchema("orders-value", 1, 51, sr.Schema{Schema: jsonOrder, Type: sr.TypeJSON,
		References: []sr.SchemaReference{{Name: "address.json", Subject: "address", Version: 1}}})
	return newDecoder(t, newRegistry(t, f.client(t)), JSONSchema)
}

func TestJSONSchemaValueModel(t *testing.T) {
	d := jsonSetup(t)
	v, err := d.Decode(context.Background(), frame(t, 51, nil, []byte(`{"id":9007199254740993,"price":2.5,"home":{"city":"Oslo"},"tags":["a"],"n":null,"big":1e400}`)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": 9007199254740993, "price": 2.5, "home": map[string]any{"city": "Oslo"}, "tags": []any{"a"}, "n": nil, "big": "1e400"}
	if !reflect.DeepEqual(v.Fields, want) {
		t.Fatalf("fields %#v, want %#v", v.Fields, want)
	}
}

func TestJSONSchemaErrors(t *testing.T) {
	d := jsonSetup(t)
	for _, c := range []struct {
		value, reason, says string
	}{
		{`{"id":"x"}`, wire.ReasonJSONSchemaInvalid, "/id"},
		{`{"id":1,"home":{}}`, wire.ReasonJSONSchemaInvalid, "/home"},
		{`{"price":1}`, wire.ReasonJSONSchemaInvalid, "id"},
		{`{"id":1`, wire.ReasonJSONSchemaDecode, "not valid JSON"},
		{`{"id":1} {}`, wire.ReasonJSONSchemaDecode, "data after"},
		{`[1]`, wire.ReasonJSONSchemaDecode, "not an object"},
		{"\xff", wire.ReasonJSONSchemaDecode, "UTF-8"},
		{``, wire.ReasonJSONSchemaDecode, "not valid JSON"},
	} {
		_, err := d.Decode(context.Background(), frame(t, 51, nil, []byte(c.value)))
		re := recordErr(t, err, c.reason)
		wantStage := wire.StageDecode
		if c.reason == wire.ReasonJSONSchemaInvalid {
			wantStage = wire.StageSchema
		}
		if re.Stage != wantStage || !strings.Contains(re.Error(), c.says) || re.SchemaID != 51 {
			t.Errorf("%q: %v (stage %s), want it to say %q", c.value, re, re.Stage, c.says)
		}
	}
}

func TestJSONSchemaNoRemoteRefs(t *testing.T) {
	m := newMem()
	m.add(1, sr.Schema{Schema: `{"$ref":"https://example.invalid/x.json"}`, Type: sr.TypeJSON})
	d := newDecoder(t, newRegistry(t, m), JSONSchema)
	_, err := d.Decode(context.Background(), frame(t, 1, nil, []byte(`{}`)))
	re := recordErr(t, err, wire.ReasonJSONSchemaDecode)
	if !strings.Contains(re.Error(), "not among the registry's references") {
		t.Fatalf("%v", re)
	}
}
