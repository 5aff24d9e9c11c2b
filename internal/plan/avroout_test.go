package plan

import (
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/config"

	"github.com/hamba/avro/v2"
)

const avroOutConfig = `application_id: orders-router
brokers: [127.0.0.1:9092]
inputs:
  - topic: orders
    schema: ../config/testdata/good/schemas/order.json
schema_registry:
  url: http://registry:8081
routing:
  match: all
  default: drop
routes:
  - name: orders-avro
    topic: orders.avro
    format: avro
    project:
      id: id
      who: string(customer)
      n: int(amount)
      amount: amount
      ratio: float(amount) / 3
      big: amount > 100
  - name: whole
    topic: orders.whole
    format: avro
  - name: per-minute
    topic: orders.per-minute
    format: avro
    window:
      type: tumbling
      size: 1m
      late_topic: orders.late
      aggregates:
        - {name: n, fn: count}
        - {name: total, fn: sum, of: amount}
        - {name: last_customer, fn: last, of: customer}
dirty:
  topic: orders.dirty
`

func loadAvroOut(t *testing.T, src string) *Plan {
	t.Helper()
	cfg, err := config.Load("avro.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(config.Overrides{}); err != nil {
		t.Fatal(err)
	}
	top, err := Compile(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// Each route's record schema: the connect-json field list, each field
// ["null", T] with default null (int64 -> long, double, string, boolean),
// the route name as the record name, namespace sidestream; hamba parses
// every one of them.
func TestAvroSchemaDerivation(t *testing.T) {
	top := loadAvroOut(t, avroOutConfig)
	f := func(name, typ string) string {
		return `{"name":"` + name + `","type":["null","` + typ + `"],"default":null}`
	}
	want := map[string]struct {
		schema, subject, where string
		fromInput              bool
	}{
		"orders-avro": {`{"type":"record","name":"orders_avro","namespace":"sidestream","fields":[` +
			strings.Join([]string{f("id", "string"), f("who", "string"), f("n", "long"), f("amount", "double"), f("ratio", "double"), f("big", "boolean")}, ",") + `]}`,
			"orders.avro-value", "routes[0] (line 12)", false},
		// The input JSON Schema's properties, sorted by name.
		"whole": {`{"type":"record","name":"whole","namespace":"sidestream","fields":[` +
			strings.Join([]string{f("amount", "double"), f("country", "string"), f("created_at", "string"), f("customer", "string"), f("id", "string")}, ",") + `]}`,
			"orders.whole-value", "routes[1] (line 22)", true},
		"per-minute": {`{"type":"record","name":"per_minute","namespace":"sidestream","fields":[` +
			strings.Join([]string{f("group_key", "string"), f("window_start", "long"), f("window_end", "long"),
				f("n", "long"), f("total", "double"), f("last_customer", "string"), f("revision", "long"), f("final", "boolean")}, ",") + `]}`,
			"orders.per-minute-value", "routes[2] (line 25)", false},
	}
	routes := top.AvroRoutes()
	if len(routes) != len(want) {
		t.Fatalf("%d avro routes, want %d", len(routes), len(want))
	}
	for _, r := range routes {
		w := want[r.Name]
		a := r.Avro
		if a.Schema != w.schema {
			t.Errorf("route %s schema\n got %s\nwant %s", r.Name, a.Schema, w.schema)
		}
		if a.Subject != w.subject || a.Where() != w.where || a.FromInput != w.fromInput {
			t.Errorf("route %s: subject %q where %q fromInput %v, want %q %q %v", r.Name, a.Subject, a.Where(), a.FromInput, w.subject, w.where, w.fromInput)
		}
		if r.Connect != nil {
			t.Errorf("route %s: an avro route has no connect-json envelope", r.Name)
		}
		s, err := avro.Parse(a.Schema)
		if err != nil {
			t.Errorf("route %s: hamba refuses the schema: %v", r.Name, err)
			continue
		}
		rec, ok := s.(*avro.RecordSchema)
		if !ok || rec.FullName() != config.AvroNamespace+"."+a.Name || len(rec.Fields()) != len(a.Fields) {
			t.Errorf("route %s: parsed %T %s", r.Name, s, s.String())
		}
	}
	// The fields an avro route without a projection reads are extracted.
	for _, name := range []string{"amount", "country", "created_at", "customer", "id"} {
		found := false
		for _, fl := range top.Fields {
			found = found || fl == name
		}
		if !found {
			t.Errorf("field %q of the whole route is not extracted: %v", name, top.Fields)
		}
	}
}

func TestAvroName(t *testing.T) {
	for in, want := range map[string]string{
		"orders":     "orders",
		"orders-eu":  "orders_eu",
		"a_b-c":      "a_b_c",
		"9lives":     "_9lives",
		"x9":         "x9",
		"":           "_",
		"Weird.Name": "Weird_Name",
	} {
		if got := config.AvroName(in); got != want {
			t.Errorf("AvroName(%q) = %q, want %q", in, got, want)
		}
	}
}

// An avro route registers its schema at start: without a registry URL
// (in the file or SIDESTREAM_SCHEMA_REGISTRY_URL) it is a problem at the
// route's format line:col; the variable alone is enough.
func TestAvroNeedsRegistry(t *testing.T) {
	src := strings.Replace(avroOutConfig, "schema_registry:\n  url: http://registry:8081\n", "", 1)
	cfg, err := config.Load("avro.yaml", []byte(src))
	if err != nil {
		t.Fatalf("an avro route loads before the registry URL is known: %v", err)
	}
	err = cfg.Apply(config.Overrides{})
	want := `avro.yaml:12:13: route "orders-avro" has format avro, whose schema is registered in a schema registry: set schema_registry.url (or SIDESTREAM_SCHEMA_REGISTRY_URL)
avro.yaml:22:13: route "whole" has format avro, whose schema is registered in a schema registry: set schema_registry.url (or SIDESTREAM_SCHEMA_REGISTRY_URL)
avro.yaml:25:13: route "per-minute" has format avro, whose schema is registered in a schema registry: set schema_registry.url (or SIDESTREAM_SCHEMA_REGISTRY_URL)`
	if err == nil || err.Error() != want {
		t.Fatalf("Apply without a registry:\n%v\nwant\n%s", err, want)
	}
	cfg, _ = config.Load("avro.yaml", []byte(src))
	if err := cfg.Apply(config.OverridesFromEnv(func(k string) string {
		if k == config.EnvRegistryURL {
			return "http://registry:8081"
		}
		return ""
	})); err != nil {
		t.Fatalf("Apply with %s: %v", config.EnvRegistryURL, err)
	}
}
