//go:build !race

// The race detector multiplies memory several times over: the peak RSS
// of a race build says nothing about the router's, so scripts/test.sh
// runs this test in a plain build.

package membound

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/runtime"
)

// The test's parameters, in one place: docs/bounded-memory.md,
// docs/sizing.md and docs/reliability.md quote them.
const (
	keys       = 1_000_000 // distinct group keys, all in one window
	maxEntries = 50_000    // limits.max_entries of the one task
	goMemLimit = "96MiB"   // GOMEMLIMIT of the router process
	rssLimitMB = 200       // the peak RSS (VmHWM) the router must stay under
	childEnv   = "SIDESTREAM_MEMBOUND_BROKERS"
)

// topologyYAML is one tumbling window per distinct id with a state limit:
// every key past the limit goes to the overflow route.
const topologyYAML = `application_id: membound
inputs: [{topic: keys}]
event_time: {field: ts}
routing: {default: drop}
routes:
  - name: perkey
    topic: perkey.out
    when: "true"
    window:
      type: tumbling
      size: 1h
      group_by: id
      emit: final
      late_topic: perkey.late
      aggregates: [{name: n, fn: count}]
      limits: {max_entries: %d, overflow_topic: perkey.overflow}
dirty: {topic: perkey.dirty}
`

// result is what the router process reports once every record is
// committed.
type result struct {
	Consumed   float64 `json:"consumed"`
	Repart     float64 `json:"repartitioned"`
	Aggregated float64 `json:"aggregated"`
	Overflowed float64 `json:"overflowed"`
	Conserved  bool    `json:"conserved"`
	OpenPeak   int     `json:"open_windows"`
}

func TestMain(m *testing.M) {
	if b := os.Getenv(childEnv); b != "" {
		os.Exit(child(strings.Split(b, ",")))
	}
	os.Exit(m.Run())
}

// child runs the router until every input and repartitioned record is
// committed, prints its result as one JSON line, and waits for stdin to
// close so the parent can read its peak RSS first.
func child(brokers []string) int {
	cfg, err := config.Load("membound.yaml", fmt.Appendf(nil, topologyYAML, maxEntries))
	if err == nil {
		err = cfg.Apply(config.Overrides{Brokers: brokers})
	}
	var top *plan.Plan
	if err == nil {
		top, err = plan.Compile(cfg, "")
	}
	var p *runtime.Processor
	if err == nil {
		p, err = runtime.New(top, runtime.WithInstanceID("membound"),
			runtime.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	m := p.Metrics()
	for s := m.Snapshot(); s.Consumed < keys || s.Repartitioned < keys; s = m.Snapshot() {
		select {
		case err := <-done:
			fmt.Fprintln(os.Stderr, "router stopped:", err)
			return 1
		case <-time.After(100 * time.Millisecond):
		}
	}
	s := m.Snapshot()
	open := 0
	for _, ts := range p.Tasks() {
		open += ts.OpenWindows
	}
	b, _ := json.Marshal(result{Consumed: s.Consumed, Repart: s.Repartitioned, Aggregated: s.Aggregated, Overflowed: s.Overflowed,
		Conserved: s.Conserved(), OpenPeak: open})
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	<-done
	return 0
}

// vmHWM is the peak resident set size of pid, in kB.
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestMillionKeysBoundedMemory feeds 1,000,000 distinct keys (one window
// each) to a router process running under GOMEMLIMIT with max_entries on
// its one window task. The task admits exactly max_entries windows and
// sends every other record, unchanged, to the overflow route, counted;
// the process's peak RSS stays under the stated limit.
func TestMillionKeysBoundedMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to read the child's peak RSS")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("keys"), kgo.ProducerLinger(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		cl.Produce(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, `{"id":"k%07d","ts":%d}`, i, 1000+i%1000)}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(brokers, ","), "GOMEMLIMIT="+goMemLimit)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("router process: %v", err)
	}
	hwm := vmHWM(t, cmd.Process.Pid)
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("router process: %v", err)
	}
	var r result
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("router result %q: %v", line, err)
	}
	t.Logf("%d keys in %s: peak RSS %d MB (limit %d MB, GOMEMLIMIT %s), %+v",
		keys, time.Since(began).Round(time.Second), hwm/1024, rssLimitMB, goMemLimit, r)
	if !r.Conserved || r.Consumed != keys || r.Repart != keys {
		t.Fatalf("records not conserved: %+v", r)
	}
	if r.Aggregated != maxEntries || r.Overflowed != keys-maxEntries || r.OpenPeak != maxEntries {
		t.Fatalf("the limit admitted %v windows (%d open) and overflowed %v records; want exactly %d and %d",
			r.Aggregated, r.OpenPeak, r.Overflowed, maxEntries, keys-maxEntries)
	}
	if hwm/1024 >= rssLimitMB {
		t.Fatalf("peak RSS %d MB, over the %d MB limit", hwm/1024, rssLimitMB)
	}
}
