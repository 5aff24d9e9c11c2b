package itest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sidestream/sidestream/internal/gen"
)

// replayWindowYAML is a repartitioned window route over the order parts:
// records per kind in 10 s event-time windows. APP and INPUT are
// replaced per run.
const replayWindowYAML = `application_id: APP
topics:
  purge_interval: 2s
  configs:
    retention.ms: -1
inputs:
  - topic: INPUT
event_time:
  field: ts
  format: epoch_ms
routing:
  match: first
  default: drop
routes:
  - name: per-kind
    topic: APP.per-kind
    window:
      type: tumbling
      size: 10s
      grace: 1s
      emit: update
      group_by: kind
      late_topic: APP.late
      aggregates:
        - {name: n, fn: count}
dirty:
  topic: APP.dirty
`

// replayTopics keeps the outputs of a replay: they carry the input
// records' old timestamps, which a topic with time retention would
// expire at once.
const replayTopics = "topics:\n  purge_interval: 2s\n  configs:\n    retention.ms: -1\n"

// TestReplayOldData replays order parts whose Kafka timestamps are a year
// old, as a backfill does, through a repartitioned window route and a
// repartitioned assembly route (examples/assemble-orders.yaml), each
// killed with SIGKILL and restarted. The broker checks retention every
// 2 s (scripts/kafka.sh), so a repartition topic with time retention
// loses the replay's records before stage two reads them. Every input
// must be accounted for (window counts + late + dirty; assembled,
// incomplete, duplicate and dirty as the generator expects), no router
// may report a gap, and the repartition topics must be purged below the
// group's committed offsets.
func TestReplayOldData(t *testing.T) {
	base := newScenario(t, "replay_old_data", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	requireRetentionCheck(t, base.adm)
	// The input keeps what it holds: the replay's source must not
	// expire either (a real backfill reads a topic with long retention).
	ac, err := base.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: new("-1")}}, base.input)
	if err == nil {
		_, err = ac.On(base.input, nil)
	}
	if err != nil {
		t.Fatalf("set retention.ms=-1 on %s: %v", base.input, err)
	}

	orders := 6000
	if v := os.Getenv("SIDESTREAM_IT_REPLAY_ORDERS"); v != "" {
		orders, _ = strconv.Atoi(v)
	}
	parts, exp := gen.OrderParts(base.rng.Uint64(), orders, inputPartitions)
	for i, p := range parts {
		base.events = append(base.events, gen.Event{ID: fmt.Sprintf("part-%d", i), Key: p.Key, Value: p.Value, TS: p.TS})
	}
	// The flush: a record an hour after the last part on every input
	// partition, so the aligned watermark closes every window of the
	// parts (its own window stays open). The assembly drops it (no part
	// route matches kind "flush").
	var maxTS int64
	for _, p := range parts {
		maxTS = max(maxTS, p.TS)
	}
	flushes := 0
	for _, k := range keysForEveryPartition("flush", inputPartitions) {
		v := fmt.Appendf(nil, `{"kind":"flush","order_id":%q,"ts":%d}`, k, maxTS+3_600_000)
		base.events = append(base.events, gen.Event{ID: "flush-" + string(k), Key: k, Value: v, Kind: "flush", TS: maxTS + 3_600_000})
		flushes++
	}
	for i := range base.events {
		base.byID[base.events[i].ID] = &base.events[i]
	}
	yearAgo := time.Now().AddDate(-1, 0, 0)
	base.stamp = func(i int) time.Time { return yearAgo.Add(time.Duration(i) * time.Millisecond) }

	a := newAssemblyRun(base, "asm", [2]string{"guarantee: exactly_once\n", "guarantee: exactly_once\n" + replayTopics})
	src := filepath.Join(t.TempDir(), "replay-window.yaml")
	if err := os.WriteFile(src, []byte(replayWindowYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, wtop := base.derivedRun("win", src, [][2]string{{"APP", base.app + "-win"}, {"INPUT", base.input}})
	wr := wtop.Route("per-kind")
	w := &windowRun{scenario: ws, tag: "win", results: wr.Topic, late: wr.Window.Spec.LateTopic, dirty: wtop.Dirty.Topic,
		repartition: wr.Window.RepartitionTopic, changelog: wr.Window.ChangelogTopic}

	p := base.startProducer(1200) // ~10 s: the kills land mid-stream
	ra := a.startRouter("a", fastGroup...)
	rw := w.startRouter("w", fastGroup...)
	for range 2 {
		rw = w.killRestartLoop(p, rw, 1)
		ra = a.killRestartLoop(p, ra, 1)
	}
	a.waitWindowDone(p, 3*time.Minute, ra)
	w.waitWindowDone(p, 3*time.Minute, rw)

	// Purged: the repartition topics start at the group's committed
	// offsets (the live routers purge every 2 s).
	for _, run := range []*windowRun{a.windowRun, w} {
		requireRepartitionConfigs(t, run)
		waitPurged(t, run, time.Minute)
	}
	ra.stop(40 * time.Second)
	rw.stop(40 * time.Second)

	// Nothing lost: no router saw a gap, none was reset below a log start.
	for _, run := range []*scenario{a.scenario, w.scenario} {
		for _, r := range run.routers {
			for _, words := range [][]string{{"deleted by the broker before they were read"}, {"OFFSET_OUT_OF_RANGE"}} {
				if l := r.logLines(0, words...); len(l) > 0 {
					t.Errorf("router %s of %s: %d lines %q, first: %s", r.id, run.app, len(l), words[0], l[0])
				}
			}
		}
	}

	// The assembly: exactly what the generator expects.
	o := a.collect()
	ids := map[string]bool{}
	for _, kv := range o.assembled {
		id, _, _ := strings.Cut(kv, "|")
		if ids[id] {
			t.Errorf("%s assembled twice", id)
		}
		ids[id] = true
	}
	if !maps.EqualFunc(ids, exp.Complete, func(bool, []string) bool { return true }) {
		t.Errorf("assembled %d ids, the generator expects %d", len(ids), len(exp.Complete))
	}
	if len(o.missing) != len(exp.Incomplete) || len(o.incomplete) != len(exp.Incomplete) || len(o.duplicate) != exp.DuplicateRoute || o.dirty != exp.Dirty {
		t.Errorf("incomplete %d (%d distinct), duplicate %d, dirty %d; the generator expects %d, %d, %d",
			len(o.incomplete), len(o.missing), len(o.duplicate), o.dirty, len(exp.Incomplete), exp.DuplicateRoute, exp.Dirty)
	}

	// The window: the last revision of every window counts its records;
	// with the late and dirty records that is every input record but the
	// flushes, whose window stays open.
	last := map[string]windowResult{}
	late, dirty := 0, 0
	for _, r := range w.readTopics(w.outputs, true, 2*time.Minute) {
		switch r.Topic {
		case w.results:
			var res windowResult
			if err := json.Unmarshal(r.Value, &res); err != nil || res.Aggregates.N == nil {
				t.Fatalf("window result %s: %v", r.Value, err)
			}
			k := fmt.Sprintf("%s@%d", res.Key, res.WindowStart)
			if prev, ok := last[k]; !ok || res.Revision > prev.Revision {
				last[k] = res
			}
		case w.late:
			late++
		case w.dirty:
			dirty++
		}
	}
	var counted int64
	for _, res := range last {
		counted += *res.Aggregates.N
	}
	if int(counted)+late+dirty != len(base.events)-flushes {
		t.Errorf("window: %d counted + %d late + %d dirty = %d, want every one of the %d input records",
			counted, late, dirty, int(counted)+late+dirty, len(base.events)-flushes)
	}
	line := fmt.Sprintf("scenario=replay_old_data records=%d orders=%d kills=%d assembled=%d incomplete=%d duplicate=%d asm_dirty=%d windows=%d counted=%d late=%d win_dirty=%d elapsed=%s",
		len(base.events), orders, a.kills+w.kills, len(o.assembled), len(o.incomplete), len(o.duplicate), o.dirty,
		len(last), counted, late, dirty, time.Since(base.started).Round(100*time.Millisecond))
	t.Log(line)
	fmt.Println(line)
}

// requireRetentionCheck fails unless the broker applies time retention
// within seconds: with Kafka's default (5 minutes) a replay test could
// not see a repartition topic expire, and would pass on a router that
// loses data.
func requireRetentionCheck(t *testing.T, adm *kadm.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatalf("broker metadata: %v", err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, md.Brokers.NodeIDs()...)
	if err != nil {
		t.Fatalf("describe broker configs: %v", err)
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key != "log.retention.check.interval.ms" {
				continue
			}
			if v, _ := strconv.Atoi(c.MaybeValue()); v <= 0 || v > 10_000 {
				t.Fatalf("broker %s has log.retention.check.interval.ms=%s; this test needs at most 10000 "+
					"(scripts/kafka.sh sets 2000 on a fresh data dir: scripts/kafka.sh down, then up)", rc.Name, c.MaybeValue())
			}
			return
		}
	}
	t.Fatal("broker configs do not list log.retention.check.interval.ms")
}

// requireRepartitionConfigs checks the router created the run's
// repartition topic without time or size retention.
func requireRepartitionConfigs(t *testing.T, run *windowRun) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rcs, err := run.adm.DescribeTopicConfigs(ctx, run.repartition)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(run.repartition, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"}
	for _, c := range rc.Configs {
		if v, ok := want[c.Key]; ok && c.MaybeValue() != v {
			t.Errorf("%s: %s=%s, want %s", run.repartition, c.Key, c.MaybeValue(), v)
		}
	}
}

// waitPurged waits until every partition of the run's repartition topic
// starts at the group's committed offset on it.
func waitPurged(t *testing.T, run *windowRun, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		offs, err := run.adm.FetchOffsets(ctx, run.app)
		var starts kadm.ListedOffsets
		if err == nil {
			starts, err = run.adm.ListStartOffsets(ctx, run.repartition)
		}
		cancel()
		var behind []string
		purged := int64(0)
		if err == nil {
			for part, lo := range starts[run.repartition] {
				c, ok := offs.Lookup(run.repartition, part)
				if !ok || c.At < 0 {
					continue
				}
				purged += lo.Offset
				if lo.Offset != c.At {
					behind = append(behind, fmt.Sprintf("p%d start %d committed %d", part, lo.Offset, c.At))
				}
				if lo.Offset > c.At {
					t.Fatalf("%s partition %d starts at %d, past the committed %d: records were deleted before stage two read them", run.repartition, part, lo.Offset, c.At)
				}
			}
		}
		if err == nil && len(behind) == 0 && purged > 0 {
			t.Logf("%s purged: %d records below the committed offsets", run.repartition, purged)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not purged to the committed offsets within %s: %v (err %v)", run.repartition, limit, behind, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
