package runtime

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/lookup"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestTablesAsOfComponent: the table is loaded before the first record,
// and each payment routes by the merchant's version valid at its event
// time; a miss and an undecodable row are counted; a row written while
// the router runs reaches later lookups.
func TestTablesAsOfComponent(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(3, "payments", "merchants"))
	brokers := c.ListenAddrs()
	top := compileAt(t, "pm.yaml", `application_id: pm
inputs: [{topic: payments}]
event_time: {field: ts, format: epoch_ms}
routing: {default: rest}
routes:
  - {name: vip, topic: vip, when: 'lookup("merchants", merchant)?.tier == "vip"'}
  - {name: rest, topic: rest}
dirty: {topic: payments.dirty}
tables:
  - {name: merchants, topic: merchants, key: id, mode: as_of, time: since, history: 1h}
`, brokers, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	produce := func(topic, value string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("merchants", `{"id":"m1","tier":"vip","since":1000}`)
	produce("merchants", `{"id":"m2","tier":"basic","since":1000}`)
	produce("merchants", `{"id":"m1","tier":"basic","since":5000}`)
	produce("merchants", `not json`)
	for _, v := range []string{
		`{"id":"p1","merchant":"m1","ts":2000}`, // vip then
		`{"id":"p2","merchant":"m1","ts":6000}`, // basic since 5000
		`{"id":"p3","merchant":"m2","ts":2000}`,
		`{"id":"p4","merchant":"m9","ts":2000}`, // a miss
	} {
		produce("payments", v)
	}
	a := start(t, top, "a")
	waitConsumed(t, a.p.Metrics(), 4, time.Minute)
	produce("merchants", `{"id":"m2","tier":"vip","since":7000}`)
	deadline := time.Now().Add(time.Minute)
	for {
		row, found, _ := a.p.Tables().Get("merchants", "m2")
		if found && row["tier"] == "vip" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the row written while running never reached the table")
		}
		time.Sleep(20 * time.Millisecond)
	}
	produce("payments", `{"id":"p5","merchant":"m2","ts":8000}`)
	waitConsumed(t, a.p.Metrics(), 5, time.Minute)
	a.stop(t)
	routed := map[string][]string{}
	for _, r := range readCommitted(t, brokers, "vip", "rest", "payments.dirty") {
		id := strings.Split(strings.Split(string(r.Value), `"id":"`)[1], `"`)[0]
		routed[r.Topic] = append(routed[r.Topic], id)
	}
	for _, ids := range routed {
		sort.Strings(ids)
	}
	if strings.Join(routed["vip"], ",") != "p1,p5" || strings.Join(routed["rest"], ",") != "p2,p3,p4" || len(routed["payments.dirty"]) != 0 {
		t.Fatalf("routed %v", routed)
	}
	m := a.p.Metrics().Tables
	if got := testutil.ToFloat64(m.Lookups.WithLabelValues("merchants", metrics.LookupMiss)); got != 1 {
		t.Errorf("misses %v", got)
	}
	if got := testutil.ToFloat64(m.Undecodable.WithLabelValues("merchants")); got != 1 {
		t.Errorf("undecodable %v", got)
	}
	if got := testutil.ToFloat64(m.Loaded.WithLabelValues("merchants")); got != 1 {
		t.Errorf("loaded %v", got)
	}
	if got := testutil.ToFloat64(m.Rows.WithLabelValues("merchants")); got != 4 {
		t.Errorf("rows (versions) %v", got)
	}
}

// A table whose topic does not exist stops the start with its name.
func TestTablesMissingTopic(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(3, "payments"))
	top := compileAt(t, "pm.yaml", `application_id: pm
inputs: [{topic: payments}]
routing: {default: rest}
routes: [{name: rest, topic: rest}]
dirty: {topic: payments.dirty}
tables: [{name: merchants, topic: merchants}]
`, c.ListenAddrs(), "")
	p, err := New(top, WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = p.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), `table "merchants": its topic "merchants" does not exist`) {
		t.Fatalf("run: %v", err)
	}
}

// A table written in transactions ends in a commit marker: the load
// passes it and the router starts.
func TestTablesTransactionalLoad(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(1, "payments", "merchants"))
	brokers := c.ListenAddrs()
	tx, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("merchants-writer"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	ctx := context.Background()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "merchants", Key: []byte("m1"), Value: []byte(`{"tier":"vip"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	top := compileAt(t, "pm.yaml", `application_id: pm
inputs: [{topic: payments}]
routing: {default: rest}
routes:
  - {name: vip, topic: vip, when: 'lookup("merchants", merchant)?.tier == "vip"'}
  - {name: rest, topic: rest}
dirty: {topic: payments.dirty}
tables: [{name: merchants, topic: merchants}]
`, brokers, "")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte(`{"merchant":"m1"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	a := start(t, top, "a")
	waitConsumed(t, a.p.Metrics(), 1, time.Minute)
	a.stop(t)
	if got := readCommitted(t, brokers, "vip"); len(got) != 1 {
		t.Fatalf("vip: %d records", len(got))
	}
}

// A table partition whose records were all deleted has nothing to load:
// the router starts.
func TestTablesDeletedRecordsLoad(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(1, "payments", "merchants"))
	brokers := c.ListenAddrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "merchants", Key: []byte("m1"), Value: []byte(`{"tier":"vip"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "merchants", Partition: 0, At: 1})
	if res, err := adm.DeleteRecords(ctx, del); err != nil || res.Error() != nil {
		t.Fatalf("delete records: %v %v", err, res.Error())
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte(`{"merchant":"m1"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	top := compileAt(t, "pm.yaml", `application_id: pm
inputs: [{topic: payments}]
routing: {default: rest}
routes:
  - {name: vip, topic: vip, when: 'lookup("merchants", merchant)?.tier == "vip"'}
  - {name: rest, topic: rest}
dirty: {topic: payments.dirty}
tables: [{name: merchants, topic: merchants}]
`, brokers, "")
	a := start(t, top, "a")
	waitConsumed(t, a.p.Metrics(), 1, time.Minute)
	a.stop(t)
	if got := readCommitted(t, brokers, "rest"); len(got) != 1 {
		t.Fatalf("rest: %d records", len(got))
	}
}

// The fast forms' read of a field (Tables.field) answers as lookup()
// does and counts the same hits and misses; it leaves an as_of table and
// an unknown one to lookup().
func TestTablesField(t *testing.T) {
	store, err := lookup.New(lookup.Spec{Mode: lookup.Current})
	if err != nil {
		t.Fatal(err)
	}
	store.Apply("42", 0, lookup.Row{"tier": "vip", "n": 3})
	var hit, miss, tooOld prometheus.Counter = prometheus.NewCounter(prometheus.CounterOpts{Name: "h"}),
		prometheus.NewCounter(prometheus.CounterOpts{Name: "m"}), prometheus.NewCounter(prometheus.CounterOpts{Name: "o"})
	cur := &table{node: &plan.TableNode{Name: "users"}, store: store, hit: hit, miss: miss, tooOld: tooOld}
	asOf := &table{node: &plan.TableNode{Name: "old", Mode: plan.TableAsOf}, store: store, hit: hit, miss: miss, tooOld: tooOld}
	ts := &Tables{byName: map[string]*table{"users": cur, "old": asOf}}
	for _, key := range []any{42, int64(42), "42", 43, "x", 1.5, nil, 42.0} {
		row, _, err := ts.lookup("users", key, 0)
		if err != nil {
			t.Fatal(err)
		}
		h0, m0 := testutil.ToFloat64(hit), testutil.ToFloat64(miss)
		v, found, ok := ts.field("users", key, "tier")
		var want any
		if r, isRow := row.(lookup.Row); isRow {
			want = r["tier"]
		}
		if !ok || found != (row != nil) || v != want {
			t.Fatalf("field(%#v) = %#v %v %v; lookup's row %#v", key, v, found, ok, row)
		}
		if dh, dm := testutil.ToFloat64(hit)-h0, testutil.ToFloat64(miss)-m0; dh+dm != 1 || (dh == 1) != found {
			t.Fatalf("field(%#v) counted %v hits and %v misses", key, dh, dm)
		}
	}
	if _, _, ok := ts.field("old", 42, "tier"); ok {
		t.Fatal("an as_of table's field was read by the fast form")
	}
	if _, _, ok := ts.field("none", 42, "tier"); ok {
		t.Fatal("an unknown table's field was read by the fast form")
	}
}

// TestReloadKeepsTables: a reloaded plan's lookup() reads the running
// router's tables (current and as_of, the fast form and the VM's), so
// records after a reload route by the table, none to dirty with "lookup
// tables are not loaded".
func TestReloadKeepsTables(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(3, "payments", "merchants", "users"))
	brokers := c.ListenAddrs()
	src := `application_id: pk
inputs: [{topic: payments}]
event_time: {field: ts, format: epoch_ms}
routing: {default: rest}
routes:
  - {name: vip, topic: vip, when: 'lookup("merchants", merchant)?.tier == "vip" && WHO'}
  - {name: rest, topic: rest}
dirty: {topic: payments.dirty}
tables:
  - {name: merchants, topic: merchants, key: id}
  - {name: users, topic: users, key: id, mode: as_of, time: since, history: 1h}
`
	v1 := compileAt(t, "pk.yaml", strings.Replace(src, "WHO", "true", 1), brokers, "")
	v2 := compileAt(t, "pk.yaml", strings.Replace(src, "WHO", `lookup("users", user)?.vip == true`, 1), brokers, "")
	if refusals := plan.ReloadRefusals(v1, v2, plan.Diff(v1, v2)); len(refusals) != 0 {
		t.Fatalf("v2 is not a live change of v1: %v", refusals)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	produce := func(topic, value string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce("merchants", `{"id":"m1","tier":"vip"}`)
	produce("merchants", `{"id":"m2","tier":"basic"}`)
	produce("users", `{"id":"u1","vip":true,"since":1000}`)
	produce("users", `{"id":"u2","vip":false,"since":1000}`)
	produce("payments", `{"id":"p1","merchant":"m1","user":"u2","ts":2000}`) // v1: vip
	a := start(t, v1, "a")
	waitConsumed(t, a.p.Metrics(), 1, time.Minute)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = a.p.Reload(rctx, v2)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{
		`{"id":"p2","merchant":"m1","user":"u1","ts":2000}`, // vip merchant, vip user
		`{"id":"p3","merchant":"m1","user":"u2","ts":2000}`, // vip merchant, not a vip user
		`{"id":"p4","merchant":"m2","user":"u1","ts":2000}`,
	} {
		produce("payments", v)
	}
	waitConsumed(t, a.p.Metrics(), 4, time.Minute)
	a.stop(t)
	routed := map[string][]string{}
	for _, r := range readCommitted(t, brokers, "vip", "rest", "payments.dirty") {
		id := strings.Split(strings.Split(string(r.Value), `"id":"`)[1], `"`)[0]
		routed[r.Topic] = append(routed[r.Topic], id+" "+wire.String(r.Headers, wire.HeaderReason))
	}
	for _, ids := range routed {
		sort.Strings(ids)
	}
	if strings.Join(routed["vip"], ",") != "p1 ,p2 " || strings.Join(routed["rest"], ",") != "p3 ,p4 " || len(routed["payments.dirty"]) != 0 {
		t.Fatalf("routed %q", routed)
	}
}
