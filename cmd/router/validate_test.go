package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateStrict: undefined functions and non-boolean predicates are
// refused at the expression's line:col; several files, a glob and
// --format json.
func TestValidateStrict(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const base = "application_id: a\nbrokers: [k:9092]\ninputs:\n  - topic: in\nrouting:\n  default: main\nroutes:\n  - name: eu\n    topic: out.eu\n    when: %s\n  - name: main\n    topic: out\ndirty:\n  topic: in.dirty\n"
	fn := write("fn.yaml", strings.Replace(base, "%s", "lenn(region) > 0", 1))
	schema, err := filepath.Abs("../../examples/schemas/log-event.json")
	if err != nil {
		t.Fatal(err)
	}
	bare := write("bare.yaml", strings.Replace(strings.Replace(base, "%s", "level", 1), "  - topic: in\n", "  - topic: in\n    schema: "+schema+"\n", 1))
	good := write("good.yaml", strings.Replace(base, "%s", `region == "eu"`, 1))

	code, out, _ := run(t, "validate", fn, bare, good)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		fn + ":10:11: routes[0].when: unknown function lenn (did you mean len?)",
		bare + ":11:11: routes[0].when: a predicate must be true or false, but this expression yields a string",
		good + ": ok (1 inputs, 2 routes, guarantee exactly_once)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A quoted glob is expanded by the router; --format json for CI.
	code, out, _ = run(t, "validate", "--format", "json", filepath.Join(dir, "*.yaml"))
	if code != 1 {
		t.Fatalf("json: exit %d\n%s", code, out)
	}
	var res struct {
		OK    bool
		Files []struct {
			File     string
			OK       bool
			Routes   int
			Problems []struct {
				Line, Col int
				Message   string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--format json: %v\n%s", err, out)
	}
	if res.OK || len(res.Files) != 3 {
		t.Fatalf("json result %+v", res)
	}
	for _, f := range res.Files {
		switch f.File {
		case good:
			if !f.OK || f.Routes != 2 {
				t.Errorf("good file: %+v", f)
			}
		case fn:
			if f.OK || len(f.Problems) != 1 || f.Problems[0].Line != 10 || f.Problems[0].Col != 11 || !strings.Contains(f.Problems[0].Message, "unknown function lenn") {
				t.Errorf("fn file: %+v", f)
			}
		case bare:
			if f.OK || len(f.Problems) != 1 {
				t.Errorf("bare file: %+v", f)
			}
		default:
			t.Errorf("unexpected file %q", f.File)
		}
	}
	if code, out, _ := run(t, "validate", "../../examples/*.yaml"); code != 0 || strings.Count(out, ": ok (") < 4 {
		t.Errorf("the examples: exit %d\n%s", code, out)
	}
	if code, _, errs := run(t, "validate", filepath.Join(dir, "*.yml")); code != 2 || !strings.Contains(errs, "no file matches") {
		t.Errorf("empty glob: exit %d %q", code, errs)
	}
	if code, _, errs := run(t, "validate", "--format", "xml", good); code != 2 || !strings.Contains(errs, `--format "xml"`) {
		t.Errorf("--format xml: exit %d %q", code, errs)
	}
}

// TestExtraArgumentsRefused: commands that take flags only say so.
func TestExtraArgumentsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--config", example, "extra"},
		{"demo", "--records", "10", "extra"},
		{"topology", "--config", example, "extra"},
		{"redrive", "--config", example, "extra"},
		{"version", "extra"},
	} {
		if code, _, errs := run(t, args...); code != 2 || !strings.Contains(errs, `unexpected argument "extra"`) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}
