package topotest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCase writes a test file (src after its topology: line) for the
// example topology top and returns its path.
func writeCase(t *testing.T, top, src string) string {
	t.Helper()
	abs, err := filepath.Abs("../../examples/" + top)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "c.test.yaml")
	if err := os.WriteFile(f, []byte("topology: "+abs+"\n"+src), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestAdvanceWatermarkClosesWindow: with partitions: 2 and one
// advance_watermark step, the window of late-orders closes (final
// result) without a record on each partition, and a record of the
// closed window after it is late.
func TestAdvanceWatermarkClosesWindow(t *testing.T) {
	f := writeCase(t, "late-orders.yaml", `tests:
  - name: closed by the watermark
    partitions: 2
    input:
      - {key: o-1, value: {id: o-1, ts: 1789999980000, region: eu, customer: c-1, amount: 100}}
      - {key: o-2, partition: 1, value: {id: o-2, ts: 1789999990000, region: eu, customer: c-2, amount: 250}}
      - advance_watermark: 2026-09-21T14:21:00Z
      - {key: o-6, partition: 0, value: {id: o-6, ts: 1790000005000, region: eu, customer: c-4, amount: 999}}
    expect:
      orders: {contains: [{key: o-1}, {key: o-2}, {key: o-6}]}
      revenue:
        contains:
          - key: eu@1789999980000
            value_has: {final: true, aggregates: {orders: 2, revenue: 350}}
      revenue.late:
        - {key: o-6, reason: late}
`)
	code, out, errs := run(t, f)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
	}
}

// TestAdvanceTimeExpiresAssembly: advance_time moves the processing-time
// clock past order-payment-shipment's TTL (10s): the unpaid order goes
// to the incomplete route, and nothing sleeps the TTL.
func TestAdvanceTimeExpiresAssembly(t *testing.T) {
	f := writeCase(t, "order-payment-shipment.yaml", `tests:
  - name: unpaid
    input:
      - {topic: orders, key: ord-9, value: {id: ord-9, customer: c-1, amount: 10}}
      - advance_time: 5s
      - {topic: orders, key: ord-8, value: {id: ord-8, customer: c-2, amount: 20}}
      - advance_time: 6s
    expect:
      order-view.incomplete:
        - key: ord-9
          reason: incomplete
          value_has: {id: ord-9, complete: false, missing: [payment]}
`)
	start := time.Now()
	code, out, errs := run(t, f)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("the case took %s: advance_time must not sleep", took)
	}
	// wait: is virtual too: 1h of it passes at once.
	f = writeCase(t, "order-payment-shipment.yaml", `tests:
  - name: unpaid, waited
    input:
      - {topic: orders, key: ord-7, value: {id: ord-7, customer: c-1, amount: 10}}
    wait: 1h
    expect:
      order-view.incomplete: [{key: ord-7, reason: incomplete}]
`)
	if code, out, errs := run(t, f); code != 0 {
		t.Fatalf("wait: exit %d, stderr %q\n%s", code, errs, out)
	}
}

// TestDiffShowsReceived: a failing contains: lists what the route
// received, and a dirty record shows its error text.
func TestDiffShowsReceived(t *testing.T) {
	f := writeCase(t, "logs-by-level.yaml", `tests:
  - name: wrong
    input:
      - value: {id: e-1, ts: 1790000000000, level: WARN, service: s, message: m}
      - value: {id: e-5, level: INFO, service: auth, message: no event time}
    expect:
      warn: {contains: [{value_has: {id: e-9}}]}
      dirty: [{reason: schema_violation, error: "no such text"}]
`)
	code, out, _ := run(t, f)
	if code != 1 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{
		`route warn (logs.warn): 1 records; contains: 1 of 1 wanted records not received`,
		`- want value_has={"id":"e-9"}`,
		`got  value={"id":"e-1","level":"WARN","message":"m","service":"s","ts":1790000000000}`,
		`- want reason=schema_violation error~"no such text"`,
		`+ got  reason=schema_violation error="`,
		// each wanted record's closest, and the matchers it fails
		`closest: value={"id":"e-1",`,
		`value.id: want "e-9", got "e-1"`,
		`error: want text "no such text", got "schema violation at /: missing property 'ts'"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
}

// TestCheckExpectRoutes: Check names every expect: route the topology
// does not have, each at its line and column; a good file has none.
func TestCheckExpectRoutes(t *testing.T) {
	f := writeCase(t, "logs-by-level.yaml", `tests:
  - name: a
    input:
      - value: {id: x}
    expect:
      warnings: []
      main: []
  - name: b
    input:
      - value: {id: x}
    expect:
      errors: []
`)
	_, err := Check(f)
	if err == nil {
		t.Fatal("no problem found")
	}
	msg := err.Error()
	for _, want := range []string{
		f + `:7:7: tests[0] (a): expect: unknown route "warnings"`,
		f + `:13:7: tests[1] (b): expect: unknown route "errors"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "main") && strings.Contains(msg, `"main"`) {
		t.Errorf("main exists:\n%s", msg)
	}
	if _, err := Check("../../examples/late-orders.test.yaml"); err != nil {
		t.Errorf("a good file: %v", err)
	}
}

// TestStepProblemsAtLine: a bad step is reported at its line:col.
func TestStepProblemsAtLine(t *testing.T) {
	f := writeCase(t, "late-orders.yaml", `tests:
  - name: a
    partitions: 2
    input:
      - {key: o-1, partition: 3, value: {id: o-1}}
      - {advance_time: soon}
`)
	code, _, errs := run(t, f)
	if code != 2 || !strings.Contains(errs, f+`:7:9: input[1]: "soon" is not a duration`) {
		t.Fatalf("exit %d: %s", code, errs)
	}
	f = writeCase(t, "late-orders.yaml", `clock: noon
tests:
  - name: a
    input:
      - {key: o-1, value: {id: o-1}}
`)
	if code, _, errs := run(t, f); code != 2 || !strings.Contains(errs, f+`:2:1: clock "noon": give epoch ms or RFC 3339 text`) {
		t.Fatalf("exit %d: %s", code, errs)
	}
	f = writeCase(t, "late-orders.yaml", `tests:
  - name: a
    partitions: 2
    input:
      - {key: o-1, partition: 3, value: {id: o-1}}
`)
	code, out, _ := run(t, f)
	if code != 1 || !strings.Contains(out, f+`:6:9: input[0]: partition 3: the case's input topics have 2 partitions`) {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// TestFormatJSONAndVerbose: --format json is one object with each case's
// verdict and diff; verbose text lists what each route received.
func TestFormatJSONAndVerbose(t *testing.T) {
	f := writeCase(t, "logs-by-level.yaml", `tests:
  - name: good
    input:
      - value: {id: e-1, ts: 1790000000000, level: WARN, service: s, message: m}
    expect:
      warn: [{value_has: {id: e-1}}]
  - name: bad
    input:
      - value: {id: e-2, ts: 1790000000000, level: WARN, service: s, message: m}
    expect:
      warn: [{value_has: {id: e-3}}]
`)
	var out, errb bytes.Buffer
	failed, err := Run(context.Background(), []string{f}, Options{Format: "json"}, &out, &errb)
	if err != nil || !failed {
		t.Fatalf("failed %v, err %v", failed, err)
	}
	var res struct {
		OK    bool
		Cases []CaseResult
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if res.OK || len(res.Cases) != 2 || !res.Cases[0].OK || res.Cases[1].OK || !strings.Contains(res.Cases[1].Diff, `- want value_has={"id":"e-3"}`) {
		t.Fatalf("%+v", res)
	}
	out.Reset()
	if failed, err := Run(context.Background(), []string{f}, Options{Run: "^good$", Verbose: true}, &out, &errb); err != nil || failed {
		t.Fatalf("failed %v, err %v\n%s", failed, err, out.String())
	}
	if !strings.Contains(out.String(), "route warn (logs.warn): 1 records\n        value={\"id\":\"e-1\"") || strings.Contains(out.String(), "bad") {
		t.Fatalf("verbose:\n%s", out.String())
	}
}

// TestAdvanceTimeIdleSource: with idle_timeout, advance_time past it
// leaves the input partition that never spoke out of the aligned
// watermark, so the window closes on the other partition's progress.
func TestAdvanceTimeIdleSource(t *testing.T) {
	dir := t.TempDir()
	top, err := os.ReadFile("../../examples/late-orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	topo := strings.Replace(string(top), "      grace: 5m\n", "      grace: 5m\n      idle_timeout: 30s\n", 1)
	if topo == string(top) {
		t.Fatal("the topology was not rewritten")
	}
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "t.test.yaml")
	src := `topology: t.yaml
partitions: 2
tests:
  - name: partition 1 is idle
    input:
      - {key: o-1, partition: 0, value: {id: o-1, ts: 1789999980000, region: eu, customer: c-1, amount: 100}}
      - {key: t-0, partition: 0, value: {id: t-0, ts: 1790000460000, region: apac, customer: c-0, amount: 1}}
      - advance_time: 31s
    expect:
      orders: {contains: [{key: o-1}, {key: t-0}]}
      revenue:
        contains:
          - {key: eu@1789999980000, value_has: {final: true, aggregates: {orders: 1, revenue: 100}}}
`
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, f); code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
	}
}
