package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateWarnings: with match: all, a route that matches every
// record makes routing.default unreachable: a warning at the route's
// line:col, printed and listed in --format json, and the exit is 0.
func TestValidateWarnings(t *testing.T) {
	p := filepath.Join(t.TempDir(), "all.yaml")
	src := "application_id: a\nbrokers: [k:9092]\ninputs:\n  - topic: in\nrouting:\n  match: all\n  default: main\nroutes:\n  - name: every\n    topic: out.every\n  - name: main\n    topic: out\n    when: level == \"x\"\ndirty:\n  topic: in.dirty\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, "validate", p)
	want := p + `:9:5: warning: routing.default "main" is unreachable: with routing.match: all, route "every" has no when`
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, p+": ok (") {
		t.Fatalf("exit %d, want 0 and %q:\n%s", code, want, out)
	}
	code, out, _ = run(t, "validate", "--format", "json", p)
	var res struct {
		OK    bool
		Files []struct {
			OK       bool
			Warnings []struct {
				Line, Col int
				Message   string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
		t.Fatalf("--format json: exit %d %v\n%s", code, err, out)
	}
	if !res.OK || len(res.Files) != 1 || len(res.Files[0].Warnings) != 1 {
		t.Fatalf("json result %+v", res)
	}
	if w := res.Files[0].Warnings[0]; w.Line != 9 || w.Col != 5 || !strings.Contains(w.Message, `routing.default "main" is unreachable`) {
		t.Errorf("warning %+v", w)
	}
}
