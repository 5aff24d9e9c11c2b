package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/reset"
	"github.com/sidestream/sidestream/internal/runtime"
	"github.com/sidestream/sidestream/internal/serve"
)

// resetYAML has a repartitioned window, a window without a repartition
// topic (its state witness is in the input offsets' metadata) and pebble
// state on disk: everything a reset must clear.
const resetYAML = `application_id: reset-app
guarantee: exactly_once
inputs:
  - topic: logs
event_time:
  field: ts
  format: epoch_ms
routing:
  match: all
  default: drop
routes:
  - name: per-service
    topic: errors.per-service
    when: level == "ERROR"
    window:
      type: tumbling
      size: 10s
      grace: 1s
      group_by: service
      late_topic: errors.late
      aggregates:
        - {name: n, fn: count}
  - name: per-service-direct
    topic: errors.per-service-direct
    when: level == "ERROR"
    window:
      type: tumbling
      size: 10s
      grace: 1s
      group_by: service
      repartition: false
      late_topic: errors.late-direct
      aggregates:
        - {name: n, fn: count}
state:
  store: pebble
  dir: %s
dirty:
  topic: logs.dirty
`

// TestResetReprocesses: after a run has left committed offsets, internal
// topics and local state, router reset refuses while an instance is in
// the group, changes nothing with --dry-run, and then clears it all; the
// next run reprocesses every input record from the start under
// on_changelog_loss: fail without taking the emptied changelogs for a loss.
func TestResetReprocesses(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	cfgPath := filepath.Join(dir, "reset.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, resetYAML, stateDir), 0o644); err != nil {
		t.Fatal(err)
	}
	top, err := serve.LoadTopology(cfgPath, serve.Overrides(strings.Join(brokers, ","), "", "", ""), false)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	const n = 600
	services := []string{"auth", "search", "checkout", "payments"}
	var recs []*kgo.Record
	for i := range n {
		svc := services[i%len(services)]
		recs = append(recs, &kgo.Record{Key: []byte(svc),
			Value: fmt.Appendf(nil, `{"ts":%d,"level":"ERROR","service":%q}`, 1_790_000_000_000+int64(i)*100, svc)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	type router struct {
		p    *runtime.Processor
		stop func()
	}
	start := func(id string) router {
		p, err := runtime.New(top, runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
			runtime.WithInstanceID(id), runtime.WithLossRecheck(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Run(rctx) }()
		return router{p, func() {
			cancel()
			if err := <-done; err != nil && err != context.Canceled {
				t.Errorf("router %s: %v", id, err)
			}
		}}
	}
	// waitAll waits until r has consumed every input record and its
	// window stages every record repartitioned (and the direct route's).
	waitAll := func(r router) {
		t.Helper()
		rep := top.Route("per-service").Window.RepartitionTopic
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			m := r.p.Metrics()
			if testutil.ToFloat64(m.Consumed.WithLabelValues("logs")) >= n && testutil.ToFloat64(m.Repartitioned.WithLabelValues(rep)) >= n {
				return
			}
			if time.Now().After(deadline) {
				ok, why := r.p.Ready()
				t.Fatalf("not drained: %+v (ready %v %q)", m.Snapshot(), ok, why)
			}
		}
	}
	a := start("a")
	waitAll(a)

	// An instance in the group: refused.
	if code, _, errs := run(t, "reset", "--config", cfgPath, "--brokers", strings.Join(brokers, ",")); code != 1 || !strings.Contains(errs, "active members") || !strings.Contains(errs, "stop every router instance") {
		t.Fatalf("reset with a member: exit %d, stderr %q", code, errs)
	}
	a.stop()

	repartition, changelogs := top.InternalTopics()
	internal := append(append([]string{}, repartition...), changelogs...)
	exists := func() int {
		md, err := adm.ListTopics(ctx, internal...)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, tp := range internal {
			if d, ok := md[tp]; ok && d.Err == nil {
				k++
			}
		}
		return k
	}
	if exists() != 3 {
		t.Fatalf("%d of the internal topics %v exist after the first run, want 3", exists(), internal)
	}
	for _, cl := range changelogs {
		if _, err := os.Stat(filepath.Join(stateDir, cl)); err != nil {
			t.Fatalf("no local state for %s: %v", cl, err)
		}
	}

	// --dry-run prints the plan and changes nothing.
	code, out, errs := run(t, "reset", "--config", cfgPath, "--brokers", strings.Join(brokers, ","), "--dry-run")
	if code != 0 || !strings.Contains(out, "dry run: nothing changed") || !strings.Contains(out, "logs[0]") ||
		!strings.Contains(out, repartition[0]) || !strings.Contains(out, filepath.Join(stateDir, changelogs[0])) {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	if exists() != 3 {
		t.Fatal("--dry-run deleted topics")
	}
	// --to a time after every record's timestamp (the produce time): the
	// plan puts each input at its end.
	code, out, errs = run(t, "reset", "--config", cfgPath, "--brokers", strings.Join(brokers, ","), "--dry-run", "--format", "json",
		"--to", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	var plan reset.Plan
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil {
		t.Fatalf("dry run --to TIME: exit %d\n%s%s", code, out, errs)
	}
	ends, err := adm.ListEndOffsets(ctx, "logs")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range plan.Inputs {
		if e, _ := ends.Lookup(in.Topic, in.Partition); in.To != e.Offset || e.Offset > 0 && in.From <= 0 {
			t.Fatalf("--to after every record: %+v, want from a committed offset to the end %d", in, e.Offset)
		}
	}

	code, out, errs = run(t, "reset", "--config", cfgPath, "--brokers", strings.Join(brokers, ","))
	if code != 0 || !strings.Contains(out, "reset: 3 input partitions moved to earliest, 3 topics deleted, 2 local state directories removed") {
		t.Fatalf("reset: exit %d\n%s%s", code, out, errs)
	}
	if exists() != 0 {
		t.Fatal("internal topics left after the reset")
	}
	offs, err := adm.FetchOffsets(ctx, top.Settings.ApplicationID)
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic != "logs" || o.At != 0 || o.Metadata != "" {
			t.Fatalf("after the reset the group has %s[%d] at %d (metadata %q), want logs at 0 with none", o.Topic, o.Partition, o.At, o.Metadata)
		}
	})

	// The next run reads everything again and reports no loss.
	b := start("b")
	waitAll(b)
	defer b.stop()
	if ok, why := b.p.Ready(); !ok {
		t.Fatalf("after the reset: not ready: %s", why)
	}
	if s := b.p.Metrics().Snapshot(); s.Aggregated == 0 {
		t.Fatalf("the run after the reset aggregated nothing: %+v", s)
	}
	// The loss series exist at 0 from the start: sum them.
	if k := counterSum(t, b.p.Metrics(), metrics.NameChangelogLoss); k != 0 {
		t.Fatalf("the run after the reset counted %v changelog losses", k)
	}
}

// counterSum is the sum of a counter's series.
func counterSum(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, s := range mf.GetMetric() {
				sum += s.GetCounter().GetValue()
			}
		}
	}
	return sum
}
