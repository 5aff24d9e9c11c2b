package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
)

// tablesSrc is a topology with a merchants table (mode, extra lines under
// it) and a route whose when is given.
func tablesSrc(when, table string) string {
	return `application_id: t
inputs:
  - topic: payments
routing:
  default: rest
routes:
  - name: vip
    topic: vip
    when: '` + when + `'
  - name: rest
    topic: rest
dirty:
  topic: payments.dirty
tables:
  - name: merchants
    topic: merchants
` + table
}

func TestTablesValid(t *testing.T) {
	c, err := Load("t.yaml", []byte(tablesSrc(`lookup("merchants", merchant_id)?.tier == "vip"`, "    mode: as_of\n    history: 1h\n")))
	if err != nil {
		t.Fatal(err)
	}
	tb := c.Tables[0]
	if tb.Mode != TableAsOf || tb.History.D().Hours() != 1 || tb.Format != InputJSON || tb.OnTooOld != TooOldOldest {
		t.Fatalf("table as loaded: %+v", tb)
	}
	d, _ := Load("t.yaml", []byte(tablesSrc(`lookup("merchants", merchant_id) != nil`, "")))
	if d.Tables[0].Mode != TableCurrent || d.Tables[0].History.D() != DefaultTableHistory {
		t.Fatalf("defaults: %+v", d.Tables[0])
	}
	if d.Tables[0].Store != StoreMemory {
		t.Fatalf("store: %q, want memory by default", d.Tables[0].Store)
	}
}

// Each mistake is reported at its FILE:LINE:COL, inside the expression
// where the value is one line.
func TestTablesRefused(t *testing.T) {
	for _, c := range []struct{ when, table, want string }{
		{`lookup("shops", merchant_id) != nil`, "", `t.yaml:9:19: routes[0].when: no table "shops" (tables: merchants)`},
		{`lookup(merchant_id) != nil`, "", `t.yaml:9:12: routes[0].when: lookup takes a table name and a key`},
		{`lookup(table, merchant_id) != nil`, "", `t.yaml:9:19: routes[0].when: lookup's table must be a quoted name`},
		{`true`, "    mode: latest\n", `t.yaml:17:11: tables[0].mode must be "current" or "as_of", got "latest"`},
		{`true`, "    time: ts\n", `t.yaml:17:11: tables[0].time is read only in mode "as_of"`},
		{`true`, "    on_too_old: fail\n", `t.yaml:17:17: tables[0].on_too_old must be "oldest" or "dirty"`},
		{`true`, "    format: csv\n", `t.yaml:17:13: table format "csv" is not supported (supported: json, avro, protobuf, json_schema)`},
		{`true`, "    format: avro\n    schema: m.json\n", `t.yaml:18:13: tables[0].schema (a JSON Schema file) goes only with format json`},
		{`true`, "  - name: merchants\n    topic: m2\n", `t.yaml:17:11: table "merchants" is declared twice`},
		{`true`, "  - name: Bad\n    topic: m2\n", `t.yaml:17:11: table name "Bad"`},
		{`true`, "  - name: refunds\n    topic: payments\n", `t.yaml:18:12: input topic "payments" is listed twice`},
		{`true`, "    limits: {max_entries: -1}\n", `tables[0].limits.max_entries must not be negative`},
		{`true`, "    store: disk\n", `t.yaml:17:12: tables[0].store must be "memory" or "pebble", got "disk"`},
	} {
		_, err := Load("t.yaml", []byte(tablesSrc(c.when, c.table)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %q: got %v, want %s", c.when, c.table, err, c.want)
		}
	}
}

// A closed schema names the fields a row may have: reading another is
// refused where it is written; an open schema leaves fields dynamic.
func TestTablesSchemaFields(t *testing.T) {
	dir := t.TempDir()
	closed := `{"type":"object","properties":{"id":{"type":"string"},"tier":{"type":"string"}},"additionalProperties":false}`
	open := `{"type":"object","properties":{"id":{"type":"string"}}}`
	for name, s := range map[string]string{"closed.json": closed, "open.json": open} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "t.yaml")
	load := func(when, schema string) error {
		_, err := Load(path, []byte(tablesSrc(when, "    schema: "+schema+"\n")))
		return err
	}
	if err := load(`lookup("merchants", merchant_id)?.tier == "vip"`, "closed.json"); err != nil {
		t.Fatal(err)
	}
	err := load(`lookup("merchants", merchant_id)?.level == "vip"`, "closed.json")
	if err == nil || !strings.Contains(err.Error(), `:9:46: routes[0].when: table "merchants" has no field "level" (its schema's fields: id, tier)`) {
		t.Fatalf("closed schema, unknown field: %v", err)
	}
	if err := load(`lookup("merchants", merchant_id)?.level == "vip"`, "open.json"); err != nil {
		t.Fatalf("open schema: %v", err)
	}
	if err := load(`true`, "missing.json"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing schema: %v", err)
	}
}

// lookup reads the event time and the record's marks: the expression's
// metadata says so, the function receives them as its last arguments, and
// a too-old answer names its table in the marks (once), a fresh one not.
func TestTableFunctionEventTime(t *testing.T) {
	c, err := Load("t.yaml", []byte(tablesSrc(`true`, "")))
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	tooOld := false
	fn := c.TableFunction(func(table string, key any, at int64) (any, bool, error) {
		got = []any{table, key, at}
		return map[string]any{"tier": "vip"}, tooOld, nil
	})
	e, err := CompileExprWith(`lookup("merchants", id).tier == "vip" && lookup("merchants", id) != nil`, true, Functions{fn})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(e.Meta, ",") != MetaEventTime+","+MetaLookups || len(e.Fields) != 1 || e.Fields[0] != "id" {
		t.Fatalf("fields %v meta %v", e.Fields, e.Meta)
	}
	for _, tooOld = range []bool{false, true} {
		marks := &LookupMarks{}
		out, err := expr.Run(e.Program, map[string]any{"id": "m1", MetaEventTime: 42, MetaLookups: marks})
		if err != nil || out != true {
			t.Fatalf("run: %v %v", out, err)
		}
		if want := map[bool]string{true: "merchants"}[tooOld]; strings.Join(marks.TooOld, ",") != want {
			t.Fatalf("too old %v: marks %q, want %q", tooOld, marks.TooOld, want)
		}
	}
	// Without marks (stage two's variables): nothing to mark, no failure.
	if out, err := expr.Run(e.Program, map[string]any{"id": "m1", MetaEventTime: 42}); err != nil || out != true {
		t.Fatalf("run without marks: %v %v", out, err)
	}
	if got[0] != "merchants" || got[1] != "m1" || got[2] != int64(42) {
		t.Fatalf("lookup got %v", got)
	}
}

// A registry table's writer schema (router validate --registry gives it
// by the table's topic, as an input's) names the fields a row has:
// reading another is refused where it is written; a subject the registry
// lacks is a problem at the table's topic.
func TestTablesRegistryFields(t *testing.T) {
	src := func(when string) string {
		return tablesSrc(when, "    format: avro\n") + "schema_registry:\n  url: http://registry:8081\n"
	}
	merchants := SchemaFields{Fields: typedFields{"id": {"string"}, "tier": {"string"}}, Name: "the writer schema of subject merchants-value"}
	if err := loadWithFields(t, src(`lookup("merchants", merchant_id)?.tier == "vip"`), map[string]SchemaFields{"merchants": merchants}); err != nil {
		t.Fatalf("a field of the schema: %v", err)
	}
	err := loadWithFields(t, src(`lookup("merchants", merchant_id)?.level == "vip"`), map[string]SchemaFields{"merchants": merchants})
	if err == nil || !strings.Contains(err.Error(), `t.yaml:9:46: routes[0].when: table "merchants" has no field "level" (its schema's fields: id, tier)`) {
		t.Fatalf("a field the schema lacks: %v", err)
	}
	if err := loadWithFields(t, src(`lookup("merchants", merchant_id)?.level == "vip"`), nil); err != nil {
		t.Fatalf("without the registry's schema the fields are dynamic: %v", err)
	}
	err = loadWithFields(t, src(`true`), map[string]SchemaFields{"merchants": {Problem: `subject "merchants-value" is not in the schema registry`}})
	if err == nil || !strings.Contains(err.Error(), `t.yaml:16:12: tables[0]: subject "merchants-value" is not in the schema registry`) {
		t.Fatalf("a subject the registry lacks: %v", err)
	}
}
