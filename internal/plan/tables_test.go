package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/expr-lang/expr"

	"github.com/sidestream/sidestream/internal/config"
)

const tablesPlanSrc = `application_id: t
inputs:
  - topic: payments
routing:
  default: rest
routes:
  - name: vip
    topic: vip
    when: 'lookup("merchants", merchant_id)?.tier == "vip"'
    key: 'lookup("merchants", merchant_id)?.region ?? "none"'
  - name: rest
    topic: rest
dirty:
  topic: payments.dirty
tables:
  - name: merchants
    topic: merchants
    key: id
    mode: as_of
    history: 1h
`

func compileTables(t *testing.T) *Plan {
	t.Helper()
	cfg, err := config.Load("t.yaml", []byte(tablesPlanSrc))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The compiled plan holds the table; its expressions read what the
// runtime binds, at the record's event time; unbound they fail.
func TestPlanTables(t *testing.T) {
	p := compileTables(t)
	tb := p.Table("merchants")
	if tb == nil || tb.Mode != TableAsOf || tb.Key != "id" || tb.History.Hours() != 1 || tb.OnTooOld != TooOldOldest {
		t.Fatalf("table: %+v", tb)
	}
	when := p.Routes[0].When
	env := map[string]any{"merchant_id": "m1", MetaEventTime: 1000}
	if _, err := expr.Run(when.Program, env); !errors.Is(err, ErrTablesNotBound) {
		t.Fatalf("unbound lookup: %v", err)
	}
	var at int64
	p.BindTables(func(table string, key any, t int64) (any, bool, error) {
		at = t
		if table == "merchants" && key == "m1" {
			return map[string]any{"tier": "vip", "region": "eu"}, false, nil
		}
		return nil, false, nil
	})
	if v, err := expr.Run(when.Program, env); err != nil || v != true || at != 1000 {
		t.Fatalf("bound lookup: %v %v at %d", v, err, at)
	}
	if v, err := expr.Run(p.Routes[0].Key.Program, map[string]any{"merchant_id": "m2", MetaEventTime: 1}); err != nil || v != "none" {
		t.Fatalf("miss: %v %v", v, err)
	}
	found := false
	for _, m := range p.Meta {
		found = found || m == MetaEventTime
	}
	if !found {
		t.Fatalf("the plan's metadata lacks the event time lookup reads: %v", p.Meta)
	}
}

// Describe lists the table and draws it into the router.
func TestDescribeTables(t *testing.T) {
	p := compileTables(t)
	b, err := p.Describe(FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"tables": [`, `"name": "merchants"`, `"mode": "as_of"`, `"history": "1h0m0s"`, `"from": "table:merchants"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("describe lacks %s:\n%s", want, b)
		}
	}
	m, _ := p.Describe(FormatMermaid)
	if !strings.Contains(string(m), "lookup") {
		t.Errorf("mermaid lacks the lookup edge:\n%s", m)
	}
	cfg, _ := config.Load("t.yaml", []byte(strings.Replace(tablesPlanSrc, "history: 1h", "history: 2h", 1)))
	q, _ := Compile(cfg, ".")
	if q.Version == p.Version {
		t.Error("a table's change leaves the plan's version as it was")
	}
	ch := Diff(p, q)
	if len(ch) != 1 || ch[0].Path != "tables" || ch[0].Class != Live {
		t.Errorf("router plan on a table's change: %+v", ch)
	}
}
