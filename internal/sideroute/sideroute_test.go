package sideroute

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/runtime"
	"github.com/sidestream/sidestream/internal/wire"
)

// exampleCopy copies examples/ to a temp dir, applies fix to the schema
// text, and loads the example topology from there pointed at brokers.
func exampleCopy(t *testing.T, brokers []string, fix func(string) string) *plan.Plan {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../examples")); err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(dir, "schemas", "log-event.json")
	b, err := os.ReadFile(sp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sp, []byte(fix(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadFile(filepath.Join(dir, "logs-by-level.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(config.Overrides{Brokers: brokers}); err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, dir+"/")
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// runRouter runs the router until the returned stop is called.
func runRouter(t *testing.T, top *plan.Plan, id string) (*metrics.Metrics, func()) {
	t.Helper()
	m := metrics.New()
	p, err := runtime.New(top, runtime.WithMetrics(m), runtime.WithInstanceID(id),
		runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("router: %v", err)
		}
	}
	t.Cleanup(stop)
	return m, stop
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func produce(t *testing.T, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, brokers []string, topics ...string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs, err := readback.ReadCommitted(ctx, brokers, topics...)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func header(r *kgo.Record, k string) string {
	for _, h := range r.Headers {
		if h.Key == k {
			return string(h.Value)
		}
	}
	return ""
}

// TestRepairLoop is docs/side-routes.md's repair loop on the embedded broker: the
// router sends TRACE records to dirty (the schema's enum lacks TRACE);
// the schema is fixed and the router restarted; the dirty TRACE records
// are redriven to the input and reach their route (main, the default),
// marked; a second redrive refuses them; a dry run writes nothing.
func TestRepairLoop(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	const n = 3000
	g := gen.New(11)
	g.BadFraction = 0.1
	var recs []*kgo.Record
	trace := 0
	for range n {
		ev := g.Next()
		if ev.Kind == gen.KindBadLevel {
			trace++
		}
		recs = append(recs, &kgo.Record{Topic: "logs", Key: ev.Key, Value: ev.Value, Headers: []kgo.RecordHeader{{Key: "trace-id", Value: []byte(ev.ID)}}})
	}
	if trace < 10 {
		t.Fatalf("generator made only %d TRACE records", trace)
	}
	produce(t, brokers, recs...)

	broken := exampleCopy(t, brokers, func(s string) string { return s })
	m, stop := runRouter(t, broken, "a")
	waitFor(t, "the first pass", func() bool { return testutil.ToFloat64(m.Consumed.WithLabelValues("logs")) == n })
	stop()
	dirtyBefore := readAll(t, brokers, "logs.dirty")

	// Tail decodes the reasons of the dirty route.
	var tailed []*kgo.Record
	if err := Read(context.Background(), ReadOptions{Brokers: brokers, Topic: "logs.dirty", Last: 2}, func(r *kgo.Record) error {
		tailed = append(tailed, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(tailed) == 0 || len(tailed) > 2*6 {
		t.Fatalf("tail --lines 2 read %d records", len(tailed))
	}
	for _, r := range tailed {
		rs := wire.Decode(r.Headers)
		if rs.Code() == "" || rs.Stage == "" || rs.Source() == "" || rs.SourceTopic != "logs" {
			t.Fatalf("reasons not decoded: %+v", rs)
		}
	}

	fixed := exampleCopy(t, brokers, func(s string) string {
		return strings.Replace(s, `"enum": ["DEBUG", "INFO", "WARN", "ERROR"]`, `"enum": ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]`, 1)
	})
	dirty, err := Resolve(fixed, "dirty")
	if err != nil {
		t.Fatal(err)
	}
	filter, err := config.CompileExpr(`_reason == "schema_violation" && level == "TRACE"`, true)
	if err != nil {
		t.Fatal(err)
	}
	rd := Redrive{Brokers: brokers, Topology: fixed, From: dirty, To: "logs", Filter: filter, RunID: "r1", TxnRecords: 7, MaxRedrives: 3}

	dry := rd
	dry.DryRun = true
	dc, err := dry.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if dc.Redriven != trace || dc.Read != len(dirtyBefore) || dc.FilteredOut != len(dirtyBefore)-trace || dc.Transactions != 0 {
		t.Fatalf("dry run counts %+v, want %d of %d", dc, trace, len(dirtyBefore))
	}
	if got := len(readAll(t, brokers, "logs")); got != n {
		t.Fatalf("the dry run wrote: logs has %d records, want %d", got, n)
	}

	m2, stop2 := runRouter(t, fixed, "b")
	rc, err := rd.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rc.Redriven != trace || rc.AlreadyRedriven != 0 || rc.Transactions != (trace+6)/7 {
		t.Fatalf("redrive counts %+v, want %d redriven", rc, trace)
	}
	waitFor(t, "the redriven records", func() bool {
		return testutil.ToFloat64(m2.Redriven.WithLabelValues("logs")) == float64(trace)
	})
	stop2()
	var onMain int
	origins := map[string]bool{}
	for _, r := range readAll(t, brokers, "logs.main", "logs.dirty") {
		if header(r, wire.HeaderRedriveOrigin) == "" {
			continue
		}
		if r.Topic != "logs.main" {
			t.Fatalf("redriven record on %s: %v", r.Topic, wire.Decode(r.Headers).Lines())
		}
		rs := wire.Decode(r.Headers)
		if rs.RedriveRun != "r1" || rs.RedriveCount != 1 || rs.RedriveReason != "schema_violation" || header(r, "trace-id") != string(r.Key) {
			t.Fatalf("redrive marks: %+v, trace-id %q key %q", rs, header(r, "trace-id"), r.Key)
		}
		if header(r, wire.HeaderReason) != "" {
			t.Fatalf("the old dirty headers went through: %v", r.Headers)
		}
		origins[rs.RedriveOrigin] = true
		onMain++
	}
	if onMain != trace || len(origins) != trace {
		t.Fatalf("%d redriven records on main (%d origins), want %d", onMain, len(origins), trace)
	}

	// A second redrive of the same records is refused by the ledger.
	rd.RunID = "r2"
	rc2, err := rd.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rc2.Redriven != 0 || rc2.AlreadyRedriven != trace {
		t.Fatalf("second redrive %+v, want %d refused", rc2, trace)
	}
}
