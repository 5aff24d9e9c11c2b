package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/lookup"
	"github.com/sidestream/sidestream/internal/plan"
)

// TestTablesPebbleResume: a pebble table loads N rows and stops; M more
// are written (updates, a delete, a new key); the restart reads only
// those M records, and answers every lookup as a memory table loaded
// from the whole topic does, as does a second restart that reads
// nothing. A change of the table's settings rebuilds
// the store from the whole topic.
func TestTablesPebbleResume(t *testing.T) {
	for _, mode := range []string{"current", "as_of"} {
		t.Run(mode, func(t *testing.T) { tablesPebbleResume(t, mode) })
	}
}

func tablesPebbleResume(t *testing.T, mode string) {
	c := newCluster(t, kfake.SeedTopics(1, "payments"), kfake.SeedTopics(3, "merchants"))
	brokers := c.ListenAddrs()
	dir := t.TempDir()
	compile := func(app, store, history string) *plan.Plan {
		return compileAt(t, app+".yaml", fmt.Sprintf(`application_id: %s
inputs: [{topic: payments}]
event_time: {field: ts, format: epoch_ms}
routing: {default: rest}
routes: [{name: rest, topic: rest}]
dirty: {topic: payments.dirty}
state: {dir: %q}
tables:
  - {name: merchants, topic: merchants, mode: %s, store: %s, history: %s}
`, app, dir, mode, store, history), brokers, "")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(key string, value []byte, ts int64) {
		t.Helper()
		r := &kgo.Record{Topic: "merchants", Key: []byte(key), Value: value, Timestamp: time.UnixMilli(ts)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const n = 30
	for i := range n {
		produce(fmt.Sprintf("m%d", i), fmt.Appendf(nil, `{"tier":"basic","v":%d}`, i), 1000+int64(i))
	}
	pebbleTop := compile("pm", "pebble", "1h")
	a := start(t, pebbleTop, "a")
	waitTableLoaded(t, a, n)
	a.stop(t)

	produce("m1", []byte(`{"tier":"vip","v":100}`), 5000)
	produce("m2", []byte(`{"tier":"vip","v":101}`), 5001)
	produce("m1", []byte(`{"tier":"gold","v":102}`), 5002)
	produce("m3", nil, 5003)
	produce("m99", []byte(`{"tier":"new","v":103}`), 5004)
	const m = 5

	b := start(t, pebbleTop, "b")
	waitTableLoaded(t, b, m)
	mem := start(t, compile("pm-mem", "memory", "1h"), "mem")
	waitTableLoaded(t, mem, n+m)
	sameTable(t, b, mem, n)
	if got := testutil.ToFloat64(b.p.Metrics().Tables.Rebuilds.WithLabelValues("merchants")); got != 0 {
		t.Errorf("rebuilds %v, want 0", got)
	}
	b.stop(t)

	// Nothing written since: nothing read, the store (which applied the
	// delete and the updates) answers alone.
	again := start(t, pebbleTop, "c")
	waitTableLoaded(t, again, 0)
	sameTable(t, again, mem, n)
	again.stop(t)

	// Another history: the stored versions were pruned by the old one.
	d := start(t, compile("pm", "pebble", "2h"), "d")
	waitTableLoaded(t, d, n+m)
	if got := testutil.ToFloat64(d.p.Metrics().Tables.Rebuilds.WithLabelValues("merchants")); got != 1 {
		t.Errorf("rebuilds after the history changed: %v, want 1", got)
	}
	sameTable(t, d, mem, n)
}

// waitTableLoaded waits for r's table merchants to be loaded, and fails
// unless its load read want records.
func waitTableLoaded(t *testing.T, r *running, want int) {
	t.Helper()
	m := r.p.Metrics().Tables
	deadline := time.Now().Add(time.Minute)
	for testutil.ToFloat64(m.Loaded.WithLabelValues("merchants")) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the table was not loaded within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := testutil.ToFloat64(m.LoadRecords.WithLabelValues("merchants")); got != float64(want) {
		t.Fatalf("the load read %v records, want %d", got, want)
	}
}

// sameTable fails unless r's table answers every lookup (keys m0 to
// m<n-1> and m99, at times around every version) as ref's does.
func sameTable(t *testing.T, r, ref *running, n int) {
	t.Helper()
	got, want := r.p.Tables().byName["merchants"].store, ref.p.Tables().byName["merchants"].store
	for i := range n + 100 {
		key := fmt.Sprintf("m%d", i)
		for _, at := range []int64{0, 999, 1000, 1001 + int64(i), 5000, 5001, 5002, 5003, 5004, 9999} {
			g, gr := got.Get(key, at)
			w, wr := want.Get(key, at)
			if gr != wr || fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("Get(%s, %d): %v %v, memory %v %v", key, at, g, gr, w, wr)
			}
		}
	}
	gn, gb := got.Size()
	wn, wb := want.Size()
	if gn != wn || gb != wb {
		t.Fatalf("size %d %d, memory %d %d", gn, gb, wn, wb)
	}
	if _, r := got.Get("m3", 9999); r != lookup.Miss {
		t.Fatal("m3 was deleted: a hit")
	}
}

// A pebble table needs state.dir: New says so, naming the table.
func TestTablesPebbleNeedsStateDir(t *testing.T) {
	top := compileAt(t, "pm.yaml", `application_id: pm
inputs: [{topic: payments}]
routing: {default: rest}
routes: [{name: rest, topic: rest}]
dirty: {topic: payments.dirty}
tables: [{name: merchants, topic: merchants, store: pebble}]
`, []string{"127.0.0.1:1"}, "")
	_, err := New(top, WithLogger(testLogger()))
	if err == nil || !strings.Contains(err.Error(), `table "merchants": store: pebble needs state.dir`) {
		t.Fatalf("New: %v", err)
	}
}

// Records deleted past the checkpoint were never read: the restart
// wipes the store (counted) and reads what the topic still holds.
func TestTablesPebbleLogStartPastCheckpoint(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(1, "payments", "merchants"))
	brokers := c.ListenAddrs()
	top := compileAt(t, "pm.yaml", fmt.Sprintf(`application_id: pm
inputs: [{topic: payments}]
routing: {default: rest}
routes: [{name: rest, topic: rest}]
dirty: {topic: payments.dirty}
state: {dir: %q}
tables: [{name: merchants, topic: merchants, store: pebble}]
`, t.TempDir()), brokers, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	produce := func(key string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "merchants", Key: []byte(key), Value: []byte(`{"tier":"vip"}`)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		produce(fmt.Sprintf("m%d", i))
	}
	a := start(t, top, "a")
	waitTableLoaded(t, a, 5)
	a.stop(t)
	produce("m5")
	produce("m6")
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "merchants", Partition: 0, At: 6})
	if res, err := kadm.NewClient(cl).DeleteRecords(ctx, del); err != nil || res.Error() != nil {
		t.Fatalf("delete records: %v %v", err, res.Error())
	}
	b := start(t, top, "b")
	waitTableLoaded(t, b, 1)
	if got := testutil.ToFloat64(b.p.Metrics().Tables.Rebuilds.WithLabelValues("merchants")); got != 1 {
		t.Errorf("rebuilds %v, want 1", got)
	}
	ts := b.p.Tables()
	if _, found, _ := ts.Get("merchants", "m0"); found {
		t.Error("m0, deleted from the topic, survived the rebuild")
	}
	if _, found, _ := ts.Get("merchants", "m6"); !found {
		t.Error("m6 missing")
	}
}
