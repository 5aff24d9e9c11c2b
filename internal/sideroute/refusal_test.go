package sideroute

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestRedriveRefusalsAndLimit: records the router cut, records redriven
// too often and records an expression fails on stay where they are, each
// counted; --limit stops early and the next run goes on with the rest.
func TestRedriveRefusalsAndLimit(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "logs", "logs.dirty"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	h := func(kv ...string) []kgo.RecordHeader {
		var out []kgo.RecordHeader
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	var recs []*kgo.Record
	for i := range 7 {
		recs = append(recs, &kgo.Record{Topic: "logs.dirty", Key: []byte("ok-" + strconv.Itoa(i)), Value: []byte(`{"level":"TRACE","n":` + strconv.Itoa(i) + `}`),
			Headers: h("user", "u", wire.HeaderReason, "schema_violation", wire.HeaderRedriveCount, "1", wire.HeaderRedriveOrigin, "logs.dirty/0/999")})
	}
	recs = append(recs,
		&kgo.Record{Topic: "logs.dirty", Key: []byte("cut"), Value: []byte(`{"lev`), Headers: h(wire.HeaderReason, "too_large", wire.HeaderTruncated, "2000000")},
		&kgo.Record{Topic: "logs.dirty", Key: []byte("loop"), Value: []byte(`{"level":"TRACE"}`), Headers: h(wire.HeaderReason, "schema_violation", wire.HeaderRedriveCount, "3")},
		&kgo.Record{Topic: "logs.dirty", Key: []byte("text"), Value: []byte(`not json`), Headers: h(wire.HeaderReason, "invalid_json")},
	)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	top := exampleCopy(t, brokers, func(s string) string { return s })
	from, err := Resolve(top, "dirty")
	if err != nil {
		t.Fatal(err)
	}
	// Set the level of JSON values; nil for the text one: an error.
	tr, err := config.CompileExpr(`_value == nil ? nil : fromPairs(concat(toPairs(_value), [["level", "DEBUG"]]))`, false)
	if err != nil {
		t.Fatal(err)
	}
	rd := Redrive{Brokers: brokers, Topology: top, From: from, To: "logs", Transform: tr, MaxRedrives: 3, Limit: 4, RunID: "a"}
	c1, err := rd.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c1.Redriven != 4 || c1.Transactions != 1 {
		t.Fatalf("first run %+v, want 4 redriven (limit)", c1)
	}
	rd.RunID, rd.Limit = "b", 0
	c2, err := rd.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c2.Redriven != 3 || c2.AlreadyRedriven != 4 || c2.Truncated != 1 || c2.TooMany != 1 || c2.ExprErrors != 1 || c2.Read != 10 {
		t.Fatalf("second run %+v", c2)
	}
	got := readAll(t, brokers, "logs")
	if len(got) != 7 {
		t.Fatalf("%d records on logs, want 7", len(got))
	}
	for i, r := range got {
		rs := wire.Decode(r.Headers)
		if rs.RedriveCount != 2 || rs.RedriveOrigin != "logs.dirty/0/"+strconv.Itoa(i) || header(r, "user") != "u" || rs.Reason != "" {
			t.Fatalf("record %d: marks %+v headers %v", i, rs, r.Headers)
		}
		if want := `{"level":"DEBUG","n":` + strconv.Itoa(i) + `}`; string(r.Value) != want {
			t.Fatalf("record %d value %s, want %s", i, r.Value, want)
		}
		if run := map[bool]string{true: "a", false: "b"}[i < 4]; rs.RedriveRun != run {
			t.Fatalf("record %d by run %q, want %q", i, rs.RedriveRun, run)
		}
	}
}

// TestReadFollow: with Follow, records written after the start arrive,
// and cancelling ends Read without an error.
func TestReadFollow(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	produce(t, c.ListenAddrs(), &kgo.Record{Topic: "t", Partition: 0, Value: []byte("old")})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- Read(ctx, ReadOptions{Brokers: c.ListenAddrs(), Topic: "t", Last: 5, Follow: true}, func(r *kgo.Record) error {
			got <- string(r.Value)
			return nil
		})
	}()
	want := func(v string) {
		t.Helper()
		select {
		case g := <-got:
			if g != v {
				t.Fatalf("got %q, want %q", g, v)
			}
		case <-time.After(time.Minute):
			t.Fatalf("no %q within a minute", v)
		}
	}
	want("old")
	produce(t, c.ListenAddrs(), &kgo.Record{Topic: "t", Value: []byte("new")})
	want("new")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Read after cancel: %v", err)
	}
}

// TestPlanLateRecord: a late record goes back as the input it was: its
// key, value and timestamp, the input's own headers, no window or late
// headers, reason "late".
func TestPlanLateRecord(t *testing.T) {
	top, err := plan.Open("../../examples/late-orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	from, err := Resolve(top, "late")
	if err != nil || from.Topic != "orders.late" || from.Window != "revenue" {
		t.Fatalf("late route: %+v %v", from, err)
	}
	ts := time.UnixMilli(1790000000123)
	r := &kgo.Record{Topic: "orders.late", Partition: 4, Offset: 10, Key: []byte("o-1"), Value: []byte(`{"order_id":"o-1","ts":1789999260000}`), Timestamp: ts,
		Headers: []kgo.RecordHeader{
			{Key: "traceparent", Value: []byte("00-abc")},
			{Key: wire.HeaderEventTime, Value: []byte("1789999260000")},
			{Key: wire.HeaderSourceKey, Value: []byte("o-1")},
			{Key: wire.HeaderTopic, Value: []byte("orders")},
			{Key: wire.HeaderLateRoute, Value: []byte("revenue")},
			{Key: wire.HeaderLateBy, Value: []byte("61000")},
		}}
	rd := Redrive{Topology: top, From: from, To: "orders", RunID: "r"}
	out, outcome, reason := rd.plan(r, newLedger(), 5)
	if outcome != OutcomeRedriven || reason != "late" {
		t.Fatalf("outcome %s %q", outcome, reason)
	}
	if string(out.Key) != "o-1" || string(out.Value) != string(r.Value) || !out.Timestamp.Equal(ts) || out.Topic != "orders" {
		t.Fatalf("record %+v", out)
	}
	got := map[string]string{}
	for _, h := range out.Headers {
		got[h.Key] = string(h.Value)
	}
	want := map[string]string{"traceparent": "00-abc", wire.HeaderRedriveOrigin: "orders.late/4/10", wire.HeaderRedriveRun: "r",
		wire.HeaderRedriveReason: "late", wire.HeaderRedriveCount: "1", wire.HeaderRedriveAt: "5"}
	if len(got) != len(want) {
		t.Fatalf("headers %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("header %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	// The event time of a late record comes from its header.
	if et, ok := EventTime(top, r); !ok || et != 1789999260000 {
		t.Fatalf("event time %d %v", et, ok)
	}
}
