package registry

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/wire"
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

// TestSchemaViolationsStable: a value with more violations than the
// message lists reads the same on every validation (a replay writes the
// same dirty record), the three it names sorted by location.
func TestSchemaViolationsStable(t *testing.T) {
	c := jsonschema.NewCompiler()
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	value := map[string]any{}
	for _, f := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		schema["properties"].(map[string]any)[f] = map[string]any{"type": "integer"}
		value[f] = "text"
	}
	if err := c.AddResource("mem://s.json", schema); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("mem://s.json")
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for i := range 50 {
		msg, ok := SchemaViolations(sch.Validate(value))
		if !ok {
			t.Fatal("no violations read from a failing validation")
		}
		if i == 0 {
			first = msg
			continue
		}
		if msg != first {
			t.Fatalf("validation %d reads %q, the first read %q", i, msg, first)
		}
	}
	want := []string{"at /a: ", "at /b: ", "at /c: "}
	parts := strings.Split(first, "; ")
	if len(parts) != 3 {
		t.Fatalf("message %q: want three violations", first)
	}
	for i, p := range parts {
		if !strings.HasPrefix(p, want[i]) {
			t.Fatalf("violation %d is %q, want it to start %q", i, p, want[i])
		}
	}
}
