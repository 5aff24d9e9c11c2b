package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/cliexit"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/serve"
)

// testBuild is the build the tests' demos report in sidestream_build_info.
var testBuild = serve.Build{Version: "test", Revision: "r1", GoVersion: "go-test"}

// runTo runs the demo with the CLI's defaults for what o leaves zero and
// returns the exit code router demo would end with, its message on errb.
func runTo(o Options, out, errb io.Writer) int {
	if o.Serve.Listen == "" {
		o.Serve.Listen = "127.0.0.1:0"
	}
	if o.Serve.TxnTimeout == 0 {
		o.Serve.TxnTimeout = time.Minute
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	o.Serve.Build = testBuild
	err := Run(context.Background(), o, out, errb)
	var ce cliexit.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ce):
		fmt.Fprintln(errb, ce.Msg)
		return ce.Code
	}
	fmt.Fprintln(errb, err)
	return 1
}

func run(t *testing.T, o Options) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runTo(o, &out, &errb)
	return code, out.String(), errb.String()
}

func verdictOf(t *testing.T, out string) Result {
	t.Helper()
	var res Result
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
		t.Fatalf("demo output is not one JSON line: %v\n%s", err, out)
	}
	return res
}

// TestDemo runs the whole demo in process: embedded broker, generator,
// router, read-back; it must end with conservation true.
func TestDemo(t *testing.T) {
	for _, g := range []string{"exactly_once", "at_least_once"} {
		t.Run(g, func(t *testing.T) {
			code, out, errs := run(t, Options{Records: 20000, Quiet: true, Guarantee: g})
			if code != 0 {
				t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
			}
			res := verdictOf(t, out)
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
			if len(res.Warnings) != 0 || strings.Contains(errs, "warning") {
				t.Errorf("a healthy demo warns: %v %s", res.Warnings, errs)
			}
		})
	}
}

// TestDemoLateOrders runs the seed-001 example: late orders must reach the
// late topic and fired windows must receive updates.
func TestDemoLateOrders(t *testing.T) {
	code, out, errs := run(t, Options{Config: "../../examples/late-orders.yaml", Records: 20000, Quiet: true})
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	res := verdictOf(t, out)
	if !res.Conservation || res.Late == 0 || res.WindowOut["update"] == 0 || res.WindowOut["first"] == 0 || res.Routes["orders"]+res.Dirty != 20000 {
		t.Fatalf("late-orders demo: %+v", res)
	}
}

func TestDemoIgnoresSecurity(t *testing.T) {
	t.Setenv(config.EnvSecurityProtocol, "sasl_ssl")
	t.Setenv(config.EnvSASLMechanism, "PLAIN")
	code, out, errs := run(t, Options{Records: 2000, Quiet: true})
	if code != 0 || !strings.Contains(out, `"conservation":true`) {
		t.Fatalf("demo with security variables: exit %d\n%s\n%s", code, out, errs)
	}
}

// syncBuffer is a bytes.Buffer safe to read while the demo writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDemoLingerServesUI: the demo prints the web view's address, and
// with --linger keeps serving it after the verdict with the final counts.
func TestDemoLingerServesUI(t *testing.T) {
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runTo(Options{Records: 2000, Quiet: true, Linger: 3 * time.Second}, &out, &errb)
	}()
	re := regexp.MustCompile(`web view at (http://\S+/ui)\n`)
	deadline := time.Now().Add(time.Minute)
	var url string
	for url == "" {
		if m := re.FindStringSubmatch(errb.String()); m != nil {
			url = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no web view address: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for !strings.Contains(errb.String(), "stay up for 3s") {
		if time.Now().After(deadline) {
			t.Fatalf("no linger: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(url + "/state")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Ready    *bool              `json:"ready"`
		Reason   string             `json:"reason"`
		Counters map[string]float64 `json:"counters"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if v.Counters["consumed/logs"] != 2000 || v.Ready == nil || *v.Ready || !strings.Contains(v.Reason, "demo finished") {
		t.Fatalf("state after the demo: %+v", v)
	}
	if code := <-done; code != 0 || !strings.Contains(out.String(), `"conservation":true`) {
		t.Fatalf("demo exit %d: %s", code, out.String())
	}
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDemoOwnRecords runs the logs example on records of a file: each
// line's value goes where the topology sends it, a line that is not JSON
// to dirty, a blank line nowhere.
func TestDemoOwnRecords(t *testing.T) {
	lines := `{"id":"e-1","ts":1790000000000,"level":"ERROR","service":"payments","message":"card declined"}
{"id":"e-2","ts":1790000000100,"level":"WARN","service":"search","message":"slow query"}

{"id":"e-3","ts":1790000000200,"level":"INFO","service":"auth","message":"login"}
{"id":"e-4","ts":1790000000300,"level":"INFO","service":"auth","message":"logout"}
not json
`
	in := writeFile(t, "records.jsonl", lines)
	code, out, errs := run(t, Options{Config: "../../examples/logs-by-level.yaml", Inputs: []string{in}, Quiet: true})
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	res := verdictOf(t, out)
	want := map[string]int64{"error": 1, "warn": 1, "main": 2}
	if !res.Conservation || res.Produced != 5 || res.Dirty != 1 || res.DirtyReasons["invalid_json"] != 1 || fmt.Sprint(res.Routes) != fmt.Sprint(want) {
		t.Fatalf("own records: %+v", res)
	}
	// TOPIC=FILE names the input topic; a topic the topology lacks is
	// refused.
	code, out, errs = run(t, Options{Config: "../../examples/logs-by-level.yaml", Inputs: []string{"logs=" + in}, Quiet: true})
	if code != 0 || verdictOf(t, out).Produced != 5 {
		t.Fatalf("logs=FILE: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = run(t, Options{Config: "../../examples/logs-by-level.yaml", Inputs: []string{"orders=" + in}, Quiet: true})
	if code != 2 || !strings.Contains(errs, `"orders" is not an input topic of this topology (logs)`) {
		t.Fatalf("unknown topic: exit %d %q", code, errs)
	}
}

// TestDemoAllDirtyWarns: records that all go to dirty conserve, yet the
// demo says that something is off, on stderr and in the verdict.
func TestDemoAllDirtyWarns(t *testing.T) {
	in := writeFile(t, "records.jsonl", "{\"level\":\"TRACE\"}\nnot json\n{\"id\":\"x\"}\n")
	code, out, errs := run(t, Options{Config: "../../examples/logs-by-level.yaml", Inputs: []string{in}, Quiet: true})
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	res := verdictOf(t, out)
	if !res.Conservation || res.Dirty != 3 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "every record (3 of 3) went to the dirty route") {
		t.Fatalf("all dirty: %+v", res)
	}
	if !strings.Contains(errs, "demo: warning: every record (3 of 3) went to the dirty route (invalid_json=1 schema_violation=2)") {
		t.Errorf("no warning on stderr: %s", errs)
	}
}

// TestDemoOwnRecordsAssembly: records of a file on an assembly topology
// are checked against the router's counts (there is no generator's
// oracle): conservation holds.
func TestDemoOwnRecordsAssembly(t *testing.T) {
	var b strings.Builder
	// o-0 has its X part only, 5 minutes before the others: the
	// watermark passes its TTL and it expires as incomplete.
	fmt.Fprintf(&b, `{"kind":"x","order_id":"o-0","items":1,"price":2,"qty":3,"ts":%d}`+"\n", int64(1790000000000))
	for i := 1; i <= 10; i++ {
		ts := int64(1790000300000 + i)
		fmt.Fprintf(&b, `{"kind":"x","order_id":"o-%d","items":1,"price":2,"qty":3,"ts":%d}`+"\n", i, ts)
		fmt.Fprintf(&b, `{"kind":"y","order_id":"o-%d","customer":"Ann","country":"de","ts":%d}`+"\n", i, ts)
	}
	in := writeFile(t, "parts.jsonl", b.String())
	code, out, errs := run(t, Options{Config: "../../examples/assemble-orders.yaml", Inputs: []string{in}, Quiet: true})
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if res := verdictOf(t, out); !res.Conservation || res.Produced != 21 || res.Assembly["assembled"] != 10 {
		t.Fatalf("own parts: %+v", res)
	}
}

func TestDemoInputRefusesRegistryFormat(t *testing.T) {
	in := writeFile(t, "records.jsonl", "{}\n")
	code, _, errs := run(t, Options{Config: "../../examples/logs-avro.yaml", Inputs: []string{in}, Quiet: true})
	if code != 2 || !strings.Contains(errs, `input "logs-avro" has format avro: --input sends JSON lines as they are`) {
		t.Fatalf("avro input with --input: exit %d %q", code, errs)
	}
}
