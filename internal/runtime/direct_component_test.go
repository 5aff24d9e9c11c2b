package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/observe"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stagetwo"
	"github.com/sidestream/sidestream/internal/wire"
)

// compileVariant compiles testdata/errors-per-service.yaml with each
// replacement applied (each must match).
func compileVariant(t *testing.T, brokers []string, repl ...[2]string) *plan.Plan {
	t.Helper()
	b, err := os.ReadFile("testdata/errors-per-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	for _, r := range repl {
		if !strings.Contains(y, r[0]) {
			t.Fatalf("testdata/errors-per-service.yaml: %q not found", r[0])
		}
		y = strings.ReplaceAll(y, r[0], r[1])
	}
	return compileAt(t, "variant.yaml", y, brokers, "testdata/")
}

// windowOutputs are a window route's committed finals (key -> aggregates)
// before cutoff and its late record ids.
func windowOutputs(t *testing.T, brokers []string, top *plan.Plan, cutoff int64) (map[string]string, []string) {
	t.Helper()
	rt := top.Routes[0]
	finals := map[string]string{}
	var late []string
	for _, r := range readCommitted(t, brokers, rt.Topic, rt.Window.Spec.LateTopic) {
		if r.Topic == rt.Window.Spec.LateTopic {
			var v struct{ ID string }
			_ = json.Unmarshal(r.Value, &v)
			late = append(late, v.ID)
			continue
		}
		var res struct {
			WindowStart int64           `json:"window_start"`
			Aggregates  json.RawMessage `json:"aggregates"`
			Final       bool            `json:"final"`
		}
		if err := json.Unmarshal(r.Value, &res); err != nil {
			t.Fatalf("window result %q: %v", r.Value, err)
		}
		if res.Final && res.WindowStart < cutoff {
			if _, dup := finals[string(r.Key)]; dup {
				t.Fatalf("two finals for %s", r.Key)
			}
			finals[string(r.Key)] = string(res.Aggregates)
		}
	}
	slices.Sort(late)
	return finals, late
}

// TestWindowDirectEqualsRepartitioned: over an input keyed by the group
// key, a window route with repartition: false (the window runs in the
// input partition's task; no repartition topic) writes exactly the finals
// and late records of the same route with its repartition topic, and a
// record whose group key belongs to another partition goes to dirty with
// its reason instead of splitting that key's state.
func TestWindowDirectEqualsRepartitioned(t *testing.T) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	g := gen.New(5)
	n, wantErrors, produced := 8000, 0, 0
	for range n {
		ev := g.Next()
		var v struct{ Service string }
		if err := json.Unmarshal(ev.Value, &v); err != nil || v.Service == "" {
			continue // malformed events have no service: not ERRORs either
		}
		if ev.Kind == gen.KindError {
			wantErrors++
		}
		produced++
		cl.Produce(ctx, &kgo.Record{Key: []byte(v.Service), Value: ev.Value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	flushTS := g.Base + int64(n)*g.Step + 3_600_000
	extra := 0
	// One ERROR keyed by auth but written to a partition that is not
	// auth's, in a window of its own.
	authPart := stagetwo.KeyPartition(stagetwo.NewPartitioner(compileVariant(t, brokers)), "x", []byte("auth"), 6)
	wrong := (authPart + 1) % 6
	misTS := flushTS - 600_000
	mis := fmt.Sprintf(`{"id":"misrouted","ts":%d,"level":"ERROR","service":"auth","latency_ms":5}`, misTS)
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(ctx, &kgo.Record{Key: []byte("auth"), Value: []byte(mis), Partition: wrong}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	extra++
	// The flush: an ERROR per service (to its own partition), and an INFO
	// on every partition, so every input partition passes every window.
	for _, svc := range []string{"checkout", "payments", "search", "auth", "inventory", "shipping", "profile", "gateway"} {
		v := fmt.Sprintf(`{"id":"flush-%s","ts":%d,"level":"ERROR","service":%q,"latency_ms":1}`, svc, flushTS, svc)
		cl.Produce(ctx, &kgo.Record{Key: []byte(svc), Value: []byte(v)}, nil)
		extra++
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for p := range int32(6) {
		v := fmt.Sprintf(`{"id":"tick-%d","ts":%d,"level":"INFO","service":"tick","latency_ms":1}`, p, flushTS)
		if err := pcl.ProduceSync(ctx, &kgo.Record{Key: []byte("tick"), Value: []byte(v), Partition: p}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		extra++
	}

	variant := func(app, repartition string) *plan.Plan {
		return compileVariant(t, brokers,
			[2]string{"application_id: errors-per-service", "application_id: " + app},
			[2]string{"topic: errors.", "topic: " + app + "."},
			[2]string{"      emit: update\n", "      emit: update\n      repartition: " + repartition + "\n"})
	}
	direct, rep := variant("direct", "false"), variant("rep", "true")
	if !direct.Routes[0].Window.Direct || rep.Routes[0].Window.Direct {
		t.Fatal("repartition: false did not compile to a direct window")
	}
	rd, rr := start(t, direct, "d"), start(t, rep, "r")
	for _, r := range []*running{rd, rr} {
		drain(t, r, produced+extra)
		if r == rd {
			checkDirectTasks(t, rd.p, "logs", direct.Routes[0].Name, 3, func(ts observe.TaskStatus) *int64 { return ts.Watermark })
		}
		r.stop(t)
		if s := r.p.Metrics().Snapshot(); !s.Conserved() {
			t.Fatalf("conservation: %+v", s)
		}
	}

	// No repartition topic for the direct route; its changelog exists.
	adm := kadm.NewClient(cl)
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tds.Has(direct.Routes[0].Window.RepartitionTopic) || !tds.Has(direct.Routes[0].Window.ChangelogTopic) {
		t.Fatalf("direct route: repartition topic exists %v, changelog exists %v",
			tds.Has(direct.Routes[0].Window.RepartitionTopic), tds.Has(direct.Routes[0].Window.ChangelogTopic))
	}

	fd, ld := windowOutputs(t, brokers, direct, flushTS-10_000)
	fr, lr := windowOutputs(t, brokers, rep, flushTS-10_000)
	// The misrouted record: dirty with its reason in the direct run, its
	// own window in the repartitioned one.
	misKey := "auth@" + fmt.Sprint(misTS-misTS%10_000)
	if _, ok := fd[misKey]; ok {
		t.Fatalf("direct run aggregated the misrouted record: %s", fd[misKey])
	}
	if fr[misKey] == "" {
		t.Fatalf("repartitioned run has no window %s for the misrouted record (late: %v)", misKey, lr)
	}
	delete(fr, misKey)
	var dirty []string
	for _, r := range readCommitted(t, brokers, direct.Dirty.Topic) {
		if wire.String(r.Headers, wire.HeaderReason) == wire.ReasonNotPartitioned {
			dirty = append(dirty, wire.String(r.Headers, wire.HeaderReason)+":"+string(r.Value))
		}
	}
	if len(dirty) != 1 || !strings.HasPrefix(dirty[0], wire.ReasonNotPartitioned+":") || !strings.Contains(dirty[0], `"misrouted"`) {
		t.Fatalf("direct run dirty records %q, want the misrouted record with reason %s", dirty, wire.ReasonNotPartitioned)
	}
	if len(fd) == 0 || len(ld) == 0 {
		t.Fatalf("want both finals and late records: %d finals, %d late", len(fd), len(ld))
	}
	if !maps.Equal(fd, fr) {
		for k := range fd {
			if fd[k] != fr[k] {
				t.Errorf("window %s: direct %s, repartitioned %s", k, fd[k], fr[k])
			}
		}
		for k := range fr {
			if _, ok := fd[k]; !ok {
				t.Errorf("window %s only in the repartitioned run: %s", k, fr[k])
			}
		}
		t.FailNow()
	}
	if !slices.Equal(ld, lr) {
		t.Fatalf("late records differ: direct %d, repartitioned %d", len(ld), len(lr))
	}
	counted := 0
	for _, a := range fd {
		var x struct{ N int }
		_ = json.Unmarshal([]byte(a), &x)
		counted += x.N
	}
	if counted+len(ld) != wantErrors {
		t.Fatalf("ERROR events: %d in finals + %d late, want %d", counted, len(ld), wantErrors)
	}
	t.Logf("direct = repartitioned: %d finals counting %d, %d late, misrouted record dirty", len(fd), counted, len(ld))
}

// checkDirectTasks requires /tasks to list a direct task of route for
// every partition of input, beside the input partition's position, at
// least minState of them with state and, where there is state, the time
// clock gives (a window's watermark, an assembly's clock); and the input
// partitions still counted once.
func checkDirectTasks(t *testing.T, p *Processor, input, route string, minState int, clock func(observe.TaskStatus) *int64) {
	t.Helper()
	inputs, direct, withState := 0, 0, 0
	for _, ts := range p.Tasks() {
		if ts.Topic != input {
			continue
		}
		if !ts.Direct {
			inputs++
			continue
		}
		direct++
		if ts.Route != route || ts.Position <= 0 {
			t.Fatalf("direct task without its route or position: %+v", ts)
		}
		if ts.StoreEntries > 0 {
			// A partition with no record the route takes has no state.
			if clock(ts) == nil {
				t.Fatalf("direct task with state but no watermark or clock: %+v", ts)
			}
			withState++
		}
	}
	if inputs != 6 || direct != 6 || withState < minState {
		t.Fatalf("/tasks lists %d input partitions and %d direct tasks (%d with state), want 6, 6 and at least %d: %+v", inputs, direct, withState, minState, p.Tasks())
	}
	if got := testutil.ToFloat64(p.Metrics().Assigned); got != 6 {
		t.Fatalf("assigned partitions gauge %v, want 6 (direct tasks are not partitions)", got)
	}
}
