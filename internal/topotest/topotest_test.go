package topotest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/config"
)

// TestExampleTopologyTests runs every shipped example's test file.
func TestExampleTopologyTests(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tops, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Registry-backed examples included: router test runs them on an
	// in-process registry.
	registry := false
	for _, p := range tops {
		cfg, err := config.LoadFile(p)
		if err != nil {
			continue // a test file
		}
		for _, in := range cfg.Inputs {
			registry = registry || config.RegistryFormat(in.Format)
		}
	}
	if !registry {
		t.Fatal("no registry-backed example found")
	}
	if len(files) == 0 || len(files)*2 != len(tops) {
		t.Fatalf("%d test files for %d example files: every example needs one", len(files), len(tops)-len(files))
	}
	code, out, errs := run(t, "../../examples/*.test.yaml")
	if code != 0 || strings.Contains(out, "FAIL") || strings.Count(out, "ok   ") < 10 || !strings.Contains(out, "ok   ../../examples/logs-avro.test.yaml: hostile frames") {
		t.Fatalf("router test of the examples: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestTopologyTestDiff: a wrong value, a record on a route the case does
// not name, and a missing record each show in the diff, with exit 1.
func TestTopologyTestDiff(t *testing.T) {
	top, err := filepath.Abs("../../examples/logs-by-level.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := `topology: ` + top + `
tests:
  - name: wrong
    input:
      - value: {id: e-1, ts: 1790000000000, level: WARN, service: s, message: m}
      - value: {id: e-2, ts: 1790000000000, level: INFO, service: s, message: m}
    expect:
      warn:
        - value: {id: e-1, ts: 1790000000000, level: WARN, service: s, message: other}
      error:
        - key: s
`
	f := filepath.Join(t.TempDir(), "wrong.test.yaml")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, f)
	if code != 1 || !strings.Contains(errs, "1 of 1 cases failed") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
	}
	for _, want := range []string{
		"FAIL " + f + ": wrong",
		`route warn (logs.warn): 1 records`,
		`- want value={"id":"e-1","level":"WARN","message":"other","service":"s","ts":1790000000000}`,
		`+ got  value={"id":"e-1","level":"WARN","message":"m","service":"s","ts":1790000000000}`,
		`route error (logs.error): 0 records`,
		`- want key="s"`,
		`route main (logs.main): 1 records`,
		`+ got  value={"id":"e-2","level":"INFO","message":"m","service":"s","ts":1790000000000}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.test.yaml")
	if err := os.WriteFile(bad, []byte("topology: x.yaml\ntests:\n  - name: n\n    inputs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, bad); code != 2 || !strings.Contains(errs, bad+`:4:5: unknown field "inputs"`) {
		t.Errorf("a misspelt field: exit %d %q", code, errs)
	}
	if code, _, errs := run(t); code != 2 || !strings.Contains(errs, "name the test files") {
		t.Errorf("no file: exit %d %q", code, errs)
	}
}

// run runs Run on files as router test does, with its exit code: 2 for
// an error of the files, 1 when a case failed, else 0.
func run(t *testing.T, files ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	failed, err := Run(context.Background(), files, Options{}, &out, &errb)
	switch {
	case err != nil:
		fmt.Fprintln(&errb, err)
		return 2, out.String(), errb.String()
	case failed:
		return 1, out.String(), errb.String()
	}
	return 0, out.String(), errb.String()
}
