package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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
	if code, _, errs := run(t, "validate"); code != 2 || !strings.Contains(errs, "--config is required") {
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

// TestDemo runs the whole demo in process: embedded broker, generator,
// router, read-back; it must end with conservation true.
func TestDemo(t *testing.T) {
	for _, g := range []string{"exactly_once", "at_least_once"} {
		t.Run(g, func(t *testing.T) {
			code, out, errs := run(t, "demo", "--records", "20000", "--quiet", "--listen", "127.0.0.1:0", "--guarantee", g)
			if code != 0 {
				t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
			}
			var res demoResult
			if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
				t.Fatalf("demo output is not one JSON line: %v\n%s", err, out)
			}
			var routed int64
			for _, n := range res.Routes {
				routed += n
			}
			if !res.Conservation || res.Consumed != 20000 || routed+res.Dirty+res.Dropped != 20000 || res.Guarantee != g {
				t.Fatalf("demo result: %+v", res)
			}
			if res.Dirty < 100 || len(res.DirtyReasons) < 4 {
				t.Fatalf("expected ~1%% dirty of several reasons, got %d %v", res.Dirty, res.DirtyReasons)
			}
		})
	}
}

// TestDemoLateOrders runs the seed-001 example: late orders must reach the
// late topic and fired windows must receive updates.
func TestDemoLateOrders(t *testing.T) {
	code, out, errs := run(t, "demo", "--config", "../../examples/late-orders.yaml", "--records", "20000", "--quiet", "--listen", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	var res demoResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
		t.Fatalf("demo output: %v\n%s", err, out)
	}
	if !res.Conservation || res.Late == 0 || res.WindowOut["update"] == 0 || res.WindowOut["first"] == 0 || res.Routes["orders"]+res.Dirty != 20000 {
		t.Fatalf("late-orders demo: %+v", res)
	}
}
