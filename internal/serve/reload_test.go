package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/wire"
)

// reloadRig is `router run` on kfake, started from a file in a temp dir.
type reloadRig struct {
	t       *testing.T
	file    string
	brokers []string
	base    string // the topology as first written
	addr    string
	m       *metrics.Metrics
	token   string
	logs    *syncBuffer
	gen     *gen.Generator // one run of ids across the test
}

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

func newReloadRig(t *testing.T, watch bool) *reloadRig {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dir := t.TempDir()
	src, err := os.ReadFile("../../examples/logs-by-level.yaml")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := os.ReadFile("../../examples/schemas/log-event.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "schemas"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schemas", "log-event.json"), schema, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &reloadRig{t: t, file: filepath.Join(dir, "topology.yaml"), brokers: c.ListenAddrs(), m: metrics.New(), token: "tok-reload-0123456789abcdef", logs: &syncBuffer{}, gen: gen.New(1)}
	r.base = strings.Replace(string(src), "commit_interval: 100ms", "commit_interval: 100ms\napi: {auth: bearer}", 1)
	r.write(r.base)
	t.Setenv(config.EnvAPITokens, r.token)
	o := config.Overrides{Brokers: r.brokers}
	top, err := LoadTopology(r.file, o, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(r.logs, nil))
	go func() {
		done <- Run(ctx, top, Options{Listen: "127.0.0.1:0", InstanceID: "a", TxnTimeout: 10 * time.Second,
			Reload: Reload{File: r.file, Overrides: o, Watch: watch, WatchEvery: 50 * time.Millisecond}},
			log, r.m, Hooks{Listening: func(a string) { addr <- a }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case r.addr = <-addr:
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	r.waitFor("ready", func() bool { code, _ := r.do("GET", "/readyz", true); return code == 200 })
	return r
}

func (r *reloadRig) write(src string) {
	r.t.Helper()
	if err := os.WriteFile(r.file, []byte(src), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *reloadRig) do(method, path string, auth bool) (int, []byte) {
	r.t.Helper()
	req, err := http.NewRequest(method, "http://"+r.addr+path, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (r *reloadRig) reload() (int, Outcome) {
	r.t.Helper()
	code, b := r.do("POST", "/reload", true)
	var o Outcome
	if err := json.Unmarshal(b, &o); err != nil {
		r.t.Fatalf("POST /reload %d: %s", code, b)
	}
	return code, o
}

// version is the version GET /topology describes.
func (r *reloadRig) version() string {
	r.t.Helper()
	code, b := r.do("GET", "/topology", true)
	var d plan.Description
	if err := json.Unmarshal(b, &d); err != nil || code != 200 {
		r.t.Fatalf("GET /topology %d: %s", code, b)
	}
	return d.Version
}

func (r *reloadRig) waitFor(what string, ok func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: not within a minute\n%s", what, r.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// routedVersions writes n events and reads every output back until it
// holds them, returning the versions their headers name.
func (r *reloadRig) routedVersions(n int) map[string]int {
	r.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		r.t.Fatal(err)
	}
	defer cl.Close()
	g := r.gen
	ids := map[string]bool{}
	for range n {
		ev := g.Next()
		ids[ev.ID] = true
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: ev.Key, Value: ev.Value}).FirstErr(); err != nil {
			r.t.Fatal(err)
		}
	}
	versions := map[string]int{}
	r.waitFor("outputs", func() bool {
		recs, err := readback.ReadCommitted(context.Background(), r.brokers, "logs.error", "logs.warn", "logs.main", "logs.dirty")
		if err != nil {
			r.t.Fatal(err)
		}
		clear(versions)
		found := 0
		for _, rec := range recs {
			if ids[gen.IDOf(rec.Key, rec.Value)] {
				found++
				versions[wire.String(rec.Headers, wire.HeaderTopologyVersion)]++
			}
		}
		return found == n
	})
	return versions
}

// TestReloadOutcomes: POST /reload behind the API's auth; an unchanged
// file, an invalid one (its error), a breaking one and a restart-only one
// (refused with the plan's notes) leave the running version, which goes
// on routing; a live change (SIGHUP) applies; metrics and the log say so.
func TestReloadOutcomes(t *testing.T) {
	r := newReloadRig(t, false)
	v1 := r.version()
	if code, _ := r.do("POST", "/reload", false); code != http.StatusUnauthorized {
		t.Fatalf("POST /reload without a token: %d, want 401", code)
	}
	if code, o := r.reload(); code != 200 || o.Outcome != metrics.ReloadUnchanged || o.Version != v1 {
		t.Fatalf("unchanged file: %d %+v", code, o)
	}
	r.write(r.base + "\nroutes: [oops\n")
	if code, o := r.reload(); code != http.StatusUnprocessableEntity || o.Outcome != metrics.ReloadInvalid || !strings.Contains(o.Error, "topology.yaml:") || o.Version != v1 {
		t.Fatalf("invalid file: %d %+v", code, o)
	}
	r.write(strings.Replace(r.base, "application_id: logs-by-level", "application_id: logs-by-level-2", 1))
	code, o := r.reload()
	if code != http.StatusConflict || o.Outcome != metrics.ReloadRefused || len(o.Refused) == 0 || o.Refused[0].Path != "application_id" || !strings.Contains(o.Refused[0].Note, "breaking") {
		t.Fatalf("breaking file: %d %+v", code, o)
	}
	r.write(strings.Replace(r.base, "guarantee: exactly_once", "guarantee: at_least_once", 1))
	if code, o := r.reload(); code != http.StatusConflict || len(o.Refused) != 1 || o.Refused[0].Path != "guarantee" || !strings.Contains(o.Refused[0].Note, "restart") {
		t.Fatalf("guarantee change: %d %+v", code, o)
	}
	if got := r.version(); got != v1 {
		t.Fatalf("after refusals GET /topology names %s, want %s", got, v1)
	}
	if vs := r.routedVersions(50); len(vs) != 1 || vs[v1] != 50 {
		t.Fatalf("after refusals the outputs name versions %v, want %s only", vs, v1)
	}
	swapped := strings.NewReplacer(`when: level == "ERROR"`, `when: level == "WARN"`, `when: level == "WARN"`, `when: level == "ERROR"`).Replace(r.base)
	r.write(swapped)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	r.waitFor("SIGHUP reload", func() bool { return r.version() != v1 })
	v2 := r.version()
	if vs := r.routedVersions(50); len(vs) != 1 || vs[v2] != 50 {
		t.Fatalf("after the reload the outputs name versions %v, want %s only", vs, v2)
	}
	_, metricsText := r.do("GET", "/metrics", true)
	for _, want := range []string{
		`sidestream_topology_info{version="` + v2 + `"} 1`,
		`sidestream_reloads_total{outcome="applied"} 1`, `sidestream_reloads_total{outcome="unchanged"} 1`,
		`sidestream_reloads_total{outcome="invalid"} 1`, `sidestream_reloads_total{outcome="refused"} 2`,
		`sidestream_reloads_total{outcome="failed"} 0`,
	} {
		if !strings.Contains(string(metricsText), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	if strings.Contains(string(metricsText), `version="`+v1+`"`) {
		t.Errorf("/metrics still names the old version %s", v1)
	}
	logs := r.logs.String()
	if n := strings.Count(logs, `msg="topology reload"`); n != 5 {
		t.Errorf("%d reload log lines, want 5:\n%s", n, logs)
	}
	if !strings.Contains(logs, "outcome=applied version="+v2+" from="+v1+" live=2 new_state=0 breaking=0") {
		t.Errorf("no applied line with the plan's summary:\n%s", logs)
	}
}

// TestReloadWatch: with --watch a new file content reloads, without any
// signal or request.
func TestReloadWatch(t *testing.T) {
	r := newReloadRig(t, true)
	v1 := r.version()
	r.write(strings.Replace(r.base, `when: level == "INFO"`, `when: level == "INFO" || level == "DEBUG"`, 1))
	r.waitFor("watch reload", func() bool { return r.version() != v1 })
	if vs := r.routedVersions(20); len(vs) != 1 || vs[r.version()] != 20 {
		t.Fatalf("after the watch reload the outputs name %v", vs)
	}
}
