package config

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fakeFields is a FieldSchema over a tree of names; a "*" child is open.
type fakeFields map[string]fakeFields

func (f fakeFields) node(path []string) (fakeFields, bool, bool) {
	n := f
	for _, s := range path {
		if _, open := n["*"]; open {
			if c, ok := n[s]; ok {
				n = c
				continue
			}
			return nil, true, true
		}
		c, ok := n[s]
		if !ok {
			return nil, false, false
		}
		n = c
	}
	_, open := n["*"]
	return n, true, open
}

func (f fakeFields) Has(path []string) (bool, bool) {
	_, has, open := f.node(path)
	return has, open
}

func (f fakeFields) Names(path []string) []string {
	n, has, open := f.node(path)
	if !has || open {
		return nil
	}
	var out []string
	for k := range n {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var orderFields = fakeFields{"id": {}, "amount": {}, "ts": {}, "customer": {"name": {}, "city": {}}, "tags": {"*": {}}}

func loadWithFields(t *testing.T, src string, schemas map[string]SchemaFields) error {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFileWithFields(p, schemas)
	return err
}

const fieldsTopo = `application_id: a
brokers: [k:9092]
inputs:
  - topic: orders
    format: avro
schema_registry: {url: "http://127.0.0.1:1"}
event_time: {field: %ET%, format: epoch_ms}
routing: {default: main}
routes:
  - name: big
    topic: out.big
    when: %WHEN%
    key: customer.name
  - name: main
    topic: out
dirty: {topic: d}
`

func fieldsSrc(when, et string) string {
	return strings.NewReplacer("%WHEN%", when, "%ET%", et).Replace(fieldsTopo)
}

// TestSchemaFields: with a writer schema, a field no input can have is a
// problem at its name in the file (nested member reads and the event
// time field included), with the nearest name; without one, nothing is
// checked; an open place (a map) takes any name below it.
func TestSchemaFields(t *testing.T) {
	schemas := map[string]SchemaFields{"orders": {Fields: orderFields, Name: "the writer schema of input orders (subject orders-value, version 1)"}}
	for _, c := range []struct {
		name, when, et, want string
	}{
		{"good", `amount > 10 && customer.city == "x" && tags.any == "y" && $env["id"] != nil`, "ts", ""},
		{"top", "amonut > 10", "ts", `:12:11: routes[0].when: field amonut cannot be in a record (did you mean amount?): the writer schema of input orders (subject orders-value, version 1) has only amount, customer, id, tags, ts`},
		{"nested", `amount > 1 && customer.nmae == "x"`, "ts", `:12:34: routes[0].when: field customer.nmae cannot be in a record (did you mean customer.name?): customer in the writer schema of input orders (subject orders-value, version 1) has only city, name`},
		{"env", `$env["amout"] > 1`, "ts", `routes[0].when: field amout cannot be in a record (did you mean amount?)`},
		{"let", `let x = amount; x > 1`, "ts", ""},
		{"event time", "amount > 1", "tss", `:7:21: event_time.field: field tss cannot be in a record (did you mean ts?)`},
		{"nested event time", "amount > 1", "customer.when", `event_time.field: field customer.when cannot be in a record`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := loadWithFields(t, fieldsSrc(c.when, c.et), schemas)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %q", err, c.want)
			}
			if len(ce.Problems) != 1 {
				t.Errorf("%d problems, want 1: %v", len(ce.Problems), err)
			}
		})
	}
	// Without the writer schemas nothing is known of the fields.
	if err := loadWithFields(t, fieldsSrc("amonut > 10", "tss"), nil); err != nil {
		t.Errorf("without schemas: %v", err)
	}
}

// TestSchemaFieldsSeveralInputs: a field is refused only when no input
// can have it: another input's schema having it, or an input without a
// schema, lets it be.
func TestSchemaFieldsSeveralInputs(t *testing.T) {
	src := strings.Replace(fieldsSrc("refund > 1", "ts"), "    format: avro\n", "    format: avro\n  - topic: refunds\n    format: avro\n", 1)
	orders := SchemaFields{Fields: orderFields, Name: "the writer schema of input orders"}
	refunds := SchemaFields{Fields: fakeFields{"refund": {}, "ts": {}}, Name: "the writer schema of input refunds"}
	if err := loadWithFields(t, src, map[string]SchemaFields{"orders": orders, "refunds": refunds}); err != nil {
		t.Errorf("a field of one of two inputs: %v", err)
	}
	if err := loadWithFields(t, src, map[string]SchemaFields{"orders": orders}); err != nil {
		t.Errorf("an input without a schema: %v", err)
	}
	err := loadWithFields(t, strings.Replace(src, "refund > 1", "refnd > 1", 1), map[string]SchemaFields{"orders": orders, "refunds": refunds})
	if err == nil || !strings.Contains(err.Error(), "field refnd cannot be in a record (did you mean refund?): the writer schema of input orders has only amount, customer, id, tags, ts; the writer schema of input refunds has only refund, ts") {
		t.Errorf("no input has it: %v", err)
	}
}
