package registry

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

type fieldCase struct {
	path      string
	has, open bool
}

func checkFields(t *testing.T, f *Fields, cases []fieldCase) {
	t.Helper()
	for _, c := range cases {
		var path []string
		if c.path != "" {
			path = strings.Split(c.path, ".")
		}
		has, open := f.Has(path)
		if has != c.has || open != c.open {
			t.Errorf("Has(%q) = %v, %v; want %v, %v", c.path, has, open, c.has, c.open)
		}
	}
}

const fieldsAvro = `{"type":"record","name":"Order","fields":[
 {"name":"id","type":"long"},
 {"name":"customer","type":{"type":"record","name":"Customer","fields":[
   {"name":"name","type":"string"},
   {"name":"address","type":["null",{"type":"record","name":"Address","fields":[{"name":"city","type":"string"}]}]}]}},
 {"name":"pay","type":["null",{"type":"record","name":"Card","fields":[{"name":"last4","type":"string"}]},
   {"type":"record","name":"Iban","fields":[{"name":"iban","type":"string"}]}]},
 {"name":"lines","type":{"type":"array","items":"Customer"}},
 {"name":"tags","type":{"type":"map","values":"string"}},
 {"name":"parent","type":["null","Order"]},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"took","type":{"type":"fixed","name":"D","size":12,"logicalType":"duration"}}]}`

// TestAvroFields: record fields through nested records and union
// branches; arrays, maps and a record nested in itself hold anything;
// the logical time fields come from the same walk.
func TestAvroFields(t *testing.T) {
	m := newMem()
	m.add(1, sr.Schema{Schema: fieldsAvro})
	s, err := newRegistry(t, m).Lookup(context.Background(), 1)
	if err != nil || s.Err != nil {
		t.Fatal(err, s.Err)
	}
	f := s.fields()
	checkFields(t, f, []fieldCase{
		{"", true, false},
		{"id", true, false},
		{"idd", false, false},
		{"id.x", false, false},
		{"customer.name", true, false},
		{"customer.nmae", false, false},
		{"customer.address.city", true, false},
		{"customer.address.zip", false, false},
		{"pay.last4", true, false},
		{"pay.iban", true, false},
		{"pay.bic", false, false},
		{"lines", true, true},
		{"lines.0.name", true, true},
		{"tags.anything", true, true},
		{"parent.id", true, true},
		{"took.days", true, false},
		{"took.weeks", false, false},
	})
	if got, want := f.Names(nil), []string{"customer", "id", "lines", "parent", "pay", "tags", "took", "ts"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if got := f.Names([]string{"customer"}); !reflect.DeepEqual(got, []string{"address", "name"}) {
		t.Errorf("Names(customer) = %v", got)
	}
	if got := f.Names([]string{"tags"}); got != nil {
		t.Errorf("Names(tags) of a map = %v, want none", got)
	}
	if !reflect.DeepEqual(s.times, map[string]timeUnit{"ts": unitMillis}) {
		t.Errorf("times %v", s.times)
	}
}

// TestProtobufFields: every message a frame can select, their fields by
// proto names through singular messages; Timestamps and wrappers are
// values, lists and maps hold anything.
func TestProtobufFields(t *testing.T) {
	_, c := protoSetup(t)
	f := protoFileFields(c.file)
	checkFields(t, f, []fieldCase{
		{"id", true, false},     // Ping and Order
		{"status", true, false}, // Order
		{"sku", true, false},    // Order.Line, a message of its own
		{"at", true, false},     // Meta
		{"total.currency", true, false},
		{"total.cents", false, false},
		{"created", true, false},
		{"created.seconds", false, false}, // a Timestamp is epoch ms
		{"big", true, false},
		{"lines.0.sku", true, true},
		{"tags.a", true, true},
		{"meta.at", true, false},
		{"iban", true, false},
		{"nope", false, false},
	})
	order, err := c.message([]int{1})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.timesOf(order); !reflect.DeepEqual(got, map[string]timeUnit{"created": unitMillis, "meta.at": unitMillis}) {
		t.Errorf("Order times %v", got)
	}
}

// TestJSONSchemaFields: a closed object restricts its properties; an open
// one (additionalProperties not false, patternProperties, combinators)
// may hold anything.
func TestJSONSchemaFields(t *testing.T) {
	const text = `{"type":"object","additionalProperties":false,"properties":{
	  "id":{"type":"integer"},
	  "customer":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"}}},
	  "meta":{"type":"object","properties":{"k":{"type":"string"}}},
	  "any":{},
	  "mixed":{"additionalProperties":false,"properties":{"a":{}},"anyOf":[{"required":["a"]}]},
	  "items":{"type":"array"},
	  "node":{"$ref":"#/properties/customer"}}}`
	c, err := compileJSONSchema(1, text, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &Fields{root: jsonFields(c.schema, 0)}
	checkFields(t, f, []fieldCase{
		{"id", true, false},
		{"idd", false, false},
		{"customer.name", true, false},
		{"customer.nmae", false, false},
		{"meta.k", true, false},
		{"meta.other", true, true},
		{"any.x", true, true},
		{"mixed.b", true, true},
		{"items.0", true, true},
		{"node.name", true, false},
		{"node.x", false, false},
	})
	open, err := compileJSONSchema(2, `{"type":"object","properties":{"id":{"type":"integer"}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFields(t, &Fields{root: jsonFields(open.schema, 0)}, []fieldCase{{"", true, true}, {"whatever", true, true}})
}

// TestLatest: the latest version of a subject through srfake, a 404 for
// a missing subject, a schema of another format, and a registry that
// cannot answer.
func TestLatest(t *testing.T) {
	f := newFake(t)
	f.SeedSchema("orders-value", 1, 7, sr.Schema{Schema: `{"type":"record","name":"O","fields":[{"name":"id","type":"long"}]}`})
	f.SeedSchema("orders-value", 2, 8, sr.Schema{Schema: fieldsAvro})
	f.SeedSchema("pings-value", 1, 9, sr.Schema{Schema: `syntax = "proto3"; message Ping { string id = 1; }`, Type: sr.TypeProtobuf})
	r := newRegistry(t, f.client(t))
	ctx := context.Background()
	ss, err := r.Latest(ctx, "orders-value", Avro)
	if err != nil {
		t.Fatal(err)
	}
	if ss.Version != 2 || ss.ID != 8 {
		t.Errorf("latest: version %d id %d, want 2, 8", ss.Version, ss.ID)
	}
	checkFields(t, ss.Fields, []fieldCase{{"customer.name", true, false}, {"amount", false, false}})
	if ss, err := r.Latest(ctx, "pings-value", Protobuf); err != nil || ss.Fields.Names(nil)[0] != "id" {
		t.Errorf("protobuf subject: %v", err)
	}

	_, err = r.Latest(ctx, "missing-value", Avro)
	if !errors.Is(err, ErrSubjectNotFound) || IsRetryable(err) || !strings.Contains(err.Error(), `subject "missing-value"`) {
		t.Errorf("missing subject: %v", err)
	}
	_, err = r.Latest(ctx, "pings-value", Avro)
	if err == nil || IsRetryable(err) || !strings.Contains(err.Error(), "PROTOBUF schema") {
		t.Errorf("another format: %v", err)
	}

	cl, err := sr.NewClient(sr.URLs(f.URL()))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := newRegistry(t, cl).Latest(ctx, "orders-value", Avro); !IsRetryable(err) {
		t.Errorf("closed registry: %v, want an UnavailableError", err)
	}
}

// checkTypes compares Fields.Types at each dotted path (nil: unknown).
func checkTypes(t *testing.T, f *Fields, want map[string][]string) {
	t.Helper()
	for path, w := range want {
		if got := f.Types(strings.Split(path, ".")); !reflect.DeepEqual(got, w) {
			t.Errorf("Types(%q) = %v, want %v", path, got, w)
		}
	}
}

// TestFieldTypes: the JSON types of each field in the value model (the
// package doc), null where a field may be null or absent; unknown below
// an open value.
func TestFieldTypes(t *testing.T) {
	m := newMem()
	m.add(1, sr.Schema{Schema: fieldsAvro})
	s, err := newRegistry(t, m).Lookup(context.Background(), 1)
	if err != nil || s.Err != nil {
		t.Fatal(err, s.Err)
	}
	checkTypes(t, s.fields(), map[string][]string{
		"id":                    {"integer"},
		"customer":              {"object"},
		"customer.name":         {"string"},
		"customer.address":      {"object", "null"},
		"customer.address.city": {"string"},
		"pay.last4":             {"string", "null"}, // absent when the branch is an Iban
		"lines":                 {"array"},
		"lines.0":               nil,
		"tags":                  {"object"},
		"ts":                    {"integer"},
		"took.days":             {"integer"},
		"nope":                  nil,
	})

	_, c := protoSetup(t)
	checkTypes(t, protoFileFields(c.file), map[string][]string{
		"id":      {"string", "integer", "null"}, // Ping and Order; Order.Line has none
		"status":  {"string", "integer", "null"},
		"created": {"integer", "null"},
		"price":   {"number", "null"},
		"huge":    {"integer", "number", "null"},
		"gift":    {"boolean", "null"},
		"note":    {"string", "null"},
		"big":     {"integer", "null"},
		"lines":   {"array", "null"},
		"tags":    {"object", "null"},
		"total":   {"object", "null"},
		"meta.at": {"integer", "null"},
		"sku":     {"string", "null"},
		"blob":    {"string", "null"},
	})

	js, err := compileJSONSchema(1, `{"type":"object","additionalProperties":false,"required":["id","level"],"properties":{
	  "id":{"type":"integer"}, "amount":{"type":"number"}, "level":{"enum":["INFO","WARN"]},
	  "ref":{"type":["string","integer"]}, "meta":{"type":"object","properties":{"k":{"type":"string"}}}, "any":{}}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTypes(t, &Fields{root: jsonFields(js.schema, 0)}, map[string][]string{
		"id":     {"integer"},
		"amount": {"number", "null"},
		"level":  {"string"},
		"ref":    {"integer", "string", "null"},
		"meta":   {"object", "null"},
		"meta.k": nil, // below an open object
		"any":    nil,
	})
}
