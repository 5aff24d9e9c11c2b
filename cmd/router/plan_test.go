package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanCommand: the new user's path: one aggregate added to
// late-orders' window; router plan names the aggregate, the route and the
// remedies, and exits 1; a predicate change alone exits 0; a file that
// does not load exits 2.
func TestPlanCommand(t *testing.T) {
	b, err := os.ReadFile("../../examples/late-orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The example's schema path is relative to its folder.
	src := strings.ReplaceAll(string(b), "schema: schemas/", "schema: "+mustAbs(t, "../../examples/schemas")+"/")
	old := write("old.yaml", src)
	added := write("new.yaml", strings.Replace(src, "        - {name: customers, fn: distinct_count, of: customer}\n",
		"        - {name: customers, fn: distinct_count, of: customer}\n        - {name: smallest, fn: min, of: amount}\n", 1))
	code, out, errs := run(t, "plan", old, added)
	if code != 1 || !strings.Contains(out, "breaking  routes[revenue].window.aggregates") || !strings.Contains(out, "smallest") || !strings.Contains(out, "router reset --config "+added) {
		t.Fatalf("exit %d, out:\n%s\nerr: %s", code, out, errs)
	}
	code, out, _ = run(t, "plan", "--format", "json", old, added)
	var doc struct {
		Changes []struct{ Path, Class string }
		Summary map[string]int
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || doc.Summary["breaking"] != 1 || len(doc.Changes) != 1 {
		t.Fatalf("json: exit %d, %v, %+v\n%s", code, err, doc, out)
	}
	live := write("live.yaml", strings.Replace(src, "  - name: orders\n    topic: orders.clean\n", "  - name: orders\n    topic: orders.clean\n    when: amount > 0\n", 1))
	if code, out, errs := run(t, "plan", old, live); code != 0 || !strings.Contains(out, "live      routes[orders].when") {
		t.Fatalf("a predicate: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "plan", old, filepath.Join(dir, "missing.yaml")); code != 2 || errs == "" {
		t.Fatalf("a missing file: exit %d, %s", code, errs)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
