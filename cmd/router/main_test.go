package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersionAndUsage(t *testing.T) {
	if code, out, _ := run(t, "version"); code != 0 || !strings.HasPrefix(out, "router ") {
		t.Fatalf("version: %d %q", code, out)
	}
	if code, _, errs := run(t, "frobnicate"); code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: %d %q", code, errs)
	}
	if code, _, _ := run(t); code != 2 {
		t.Fatalf("no command: %d", code)
	}
	if code, _, _ := run(t, "run", "--help"); code != 0 {
		t.Fatalf("run --help: %d", code)
	}
	if code, out, _ := run(t, "help"); code != 0 || !strings.Contains(out, "Usage: router <command>") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, out, _ := run(t, "help", "tail"); code != 0 || !strings.Contains(out, "Usage: router tail") {
		t.Fatalf("help tail: %d %q", code, out)
	}
}

func TestValidate(t *testing.T) {
	code, out, _ := run(t, "validate", "--config", "../../examples/logs-by-level.yaml")
	if code != 0 || !strings.Contains(out, "ok (1 inputs, 3 routes, guarantee exactly_once)") {
		t.Fatalf("validate example: %d %q", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	src := "application_id: a\ninputs:\n  - topic: in\nroutes:\n  - name: main\n    topic: out\n    when: level ==\nrouting:\n  default: main\n"
	if err := os.WriteFile(bad, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, "validate", "--config", bad)
	if code != 1 {
		t.Fatalf("validate bad: exit %d, want 1", code)
	}
	for _, want := range []string{bad + ":1:1: the dirty route is required", bad + ":7:18: routes[0].when: the expression ends too early"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errs := run(t, "validate"); code != 2 || !strings.Contains(errs, "name the topology files (router validate FILE...), or give --config FILE or SIDESTREAM_CONFIG") {
		t.Fatalf("validate without config: %d %q", code, errs)
	}
}

func TestTopologyFormats(t *testing.T) {
	for format, want := range map[string]string{"json": `"routes"`, "dot": "digraph", "mermaid": "flowchart"} {
		code, out, errs := run(t, "topology", "--config", "../../examples/logs-by-level.yaml", "--format", format)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("topology --format %s: %d %q %q", format, code, out[:min(len(out), 200)], errs)
		}
	}
	if code, _, _ := run(t, "topology", "--config", "../../examples/logs-by-level.yaml", "--format", "png"); code != 2 {
		t.Errorf("unknown format: exit %d, want 2", code)
	}
}

// interruptSelf sends SIGINT to this process, as Ctrl-C would; realMain
// listens for it from its start.
func interruptSelf(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
}
