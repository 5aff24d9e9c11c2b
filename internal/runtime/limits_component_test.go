package runtime

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// limitedTopology is one tumbling window per distinct id, with limits.
func limitedTopology(t testing.TB, brokers []string, limits string) *plan.Plan {
	t.Helper()
	src := `application_id: limited
inputs: [{topic: keys}]
event_time: {field: ts}
routing: {default: drop}
routes:
  - name: perkey
    topic: perkey.out
    when: "true"
    window:
      type: tumbling
      size: 1m
      group_by: id
      emit: final
      late_topic: perkey.late
      aggregates: [{name: n, fn: count}]
      limits: ` + limits + `
dirty: {topic: perkey.dirty}
`
	return compileAt(t, "limited.yaml", src, brokers, "")
}

// produceKeys writes n records with distinct ids in one window, then one
// far-future record that closes it.
func produceKeys(t testing.TB, brokers []string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("keys"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		cl.Produce(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, `{"id":"k-%06d","ts":%d}`, i, 1000+i)}, nil)
	}
	cl.Produce(context.Background(), &kgo.Record{Value: []byte(`{"id":"flush","ts":100000000}`)}, nil)
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestWindowLimitsComponent runs 2,000 distinct keys through one task
// with max_entries 500 under each policy on kfake. Route: the first 500
// keys open windows, every later key and the flush record go to the
// overflow route with their limit (exactly n-500+1), and the 500 windows
// close with final results. Evict: every key past the 500th and the
// flush record evict the oldest window (n-500+1 evicted results marked
// "evicted": true), the rest close normally. Both conserve every record.
func TestWindowLimitsComponent(t *testing.T) {
	const n, maxEntries = 2000, 500
	for _, policy := range []string{config.OverflowRoute, config.OverflowEvict} {
		t.Run(policy, func(t *testing.T) {
			c := newCluster(t, kfake.SeedTopics(1, "keys"))
			limits := fmt.Sprintf("{max_entries: %d, on_overflow: %s}", maxEntries, policy)
			if policy == config.OverflowRoute {
				limits = fmt.Sprintf("{max_entries: %d, overflow_topic: perkey.overflow}", maxEntries)
			}
			top := limitedTopology(t, c.ListenAddrs(), limits)
			produceKeys(t, c.ListenAddrs(), n)
			r := start(t, top, "a")
			waitConsumedAll(t, r.p.Metrics(), 2*(n+1), time.Minute) // inputs + repartitioned
			r.stop(t)
			m := r.p.Metrics()
			s := m.Snapshot()
			if !s.Conserved() {
				t.Fatalf("not conserved: %+v", s)
			}
			over := testutil.ToFloat64(m.StateOverflow.WithLabelValues("perkey", policy))
			if want := float64(n - maxEntries + 1); over != want {
				t.Fatalf("%s count %v, want %v", policy, over, want)
			}
			outs := readCommitted(t, c.ListenAddrs(), "perkey.out")
			var evicted, finals int
			for _, rec := range outs {
				if bytes.Contains(rec.Value, []byte(`"evicted":true`)) {
					evicted++
					if wire.String(rec.Headers, wire.HeaderEvicted) != "true" {
						t.Fatalf("evicted result without its header: %s", rec.Value)
					}
				} else {
					finals++
				}
			}
			switch policy {
			case config.OverflowRoute:
				ov := readCommitted(t, c.ListenAddrs(), "perkey.overflow")
				if len(ov) != n-maxEntries+1 || s.Overflowed != float64(len(ov)) || s.Aggregated != maxEntries {
					t.Fatalf("%d overflow records, snapshot %+v", len(ov), s)
				}
				h := func(k string) string { return wire.String(ov[0].Headers, k) }
				if h(wire.HeaderOverflowRoute) != "perkey" || h(wire.HeaderOverflowLimit) != "max_entries" ||
					h(wire.HeaderOverflowMax) != fmt.Sprint(maxEntries) || h(wire.HeaderOverflowSize) != fmt.Sprint(maxEntries) || h(wire.HeaderTopic) != "keys" {
					t.Fatalf("overflow headers: %v", ov[0].Headers)
				}
				// Exactly the keys past the 500th and the flush record, unchanged.
				got := map[string]bool{}
				for _, rec := range ov {
					got[string(rec.Value)] = true
				}
				for i := maxEntries; i < n; i++ {
					if !got[fmt.Sprintf(`{"id":"k-%06d","ts":%d}`, i, 1000+i)] {
						t.Fatalf("key %d is not on the overflow route", i)
					}
				}
				if !got[`{"id":"flush","ts":100000000}`] {
					t.Fatal("the flush record is not on the overflow route")
				}
				if evicted != 0 || finals != maxEntries {
					t.Fatalf("%d evicted, %d final results; want 0, %d", evicted, finals, maxEntries)
				}
			case config.OverflowEvict:
				if evicted != n-maxEntries+1 || finals != maxEntries-1 || s.Results["evicted"] != float64(evicted) {
					t.Fatalf("%d evicted, %d final results (snapshot %+v)", evicted, finals, s)
				}
				if s.Evicted != float64(evicted) || s.Aggregated != n+1 {
					t.Fatalf("snapshot %+v", s)
				}
			}
		})
	}
}

// TestAssemblyLimitsComponent: 300 orders with distinct ids into one
// assembly task with max_entries 100, then the payments of some of them.
// Route: orders 100..299 go to the overflow route (exactly 200) and the
// first 100 complete with their payments. Evict: orders 100..299 each
// evict the oldest open one (200 incomplete records marked evicted), and
// the last 100 complete. Both conserve every record.
func TestAssemblyLimitsComponent(t *testing.T) {
	const n, maxEntries = 300, 100
	for _, policy := range []string{config.OverflowRoute, config.OverflowEvict} {
		t.Run(policy, func(t *testing.T) {
			c := newCluster(t, kfake.SeedTopics(1, "orders", "payments"))
			limits := "{max_entries: 100, on_overflow: evict}"
			if policy == config.OverflowRoute {
				limits = "{max_entries: 100, overflow_topic: joined.overflow}"
			}
			src := `application_id: alimited
inputs: [{topic: orders}, {topic: payments}]
event_time: {field: ts}
routing: {default: drop}
routes:
  - name: joined
    topic: joined.out
    assemble:
      id: id
      ttl: 1h
      time: event
      incomplete_topic: joined.incomplete
      parts:
        - {name: order, source: orders}
        - {name: payment, source: payments}
      limits: ` + limits + `
dirty: {topic: joined.dirty}
`
			top := compileAt(t, "alimited.yaml", src, c.ListenAddrs(), "")
			var parts []gen.Part
			for i := range n {
				parts = append(parts, gen.Part{Topic: "orders", Value: fmt.Appendf(nil, `{"id":"o-%03d","ts":%d}`, i, 1000+i)})
			}
			paid := 0 // the ids still open at the end: the first 100 (route) or the last 100 (evict)
			if policy == config.OverflowEvict {
				paid = n - maxEntries
			}
			var payments []gen.Part
			for i := paid; i < paid+maxEntries; i++ {
				payments = append(payments, gen.Part{Topic: "payments", Value: fmt.Appendf(nil, `{"id":"o-%03d","ts":%d}`, i, 2000+i)})
			}
			// Payments only once every order is through stage two, so the
			// order in which the task sees them is fixed.
			produceParts(t, c.ListenAddrs(), parts)
			r := start(t, top, "a")
			waitConsumedAll(t, r.p.Metrics(), 2*len(parts), time.Minute)
			produceParts(t, c.ListenAddrs(), payments)
			waitConsumedAll(t, r.p.Metrics(), 2*(len(parts)+len(payments)), time.Minute)
			r.stop(t)
			m := r.p.Metrics()
			s := m.Snapshot()
			if !s.Conserved() {
				t.Fatalf("not conserved: %+v", s)
			}
			if got := testutil.ToFloat64(m.StateOverflow.WithLabelValues("joined", policy)); got != n-maxEntries {
				t.Fatalf("%s count %v, want %d", policy, got, n-maxEntries)
			}
			if got := len(readCommitted(t, c.ListenAddrs(), "joined.out")); got != maxEntries || s.Assemblies["completed"] != maxEntries {
				t.Fatalf("%d assembled, want %d (%+v)", got, maxEntries, s)
			}
			switch policy {
			case config.OverflowRoute:
				if got := len(readCommitted(t, c.ListenAddrs(), "joined.overflow")); got != n-maxEntries {
					t.Fatalf("%d overflow records, want %d", got, n-maxEntries)
				}
			case config.OverflowEvict:
				inc := readCommitted(t, c.ListenAddrs(), "joined.incomplete")
				for _, rec := range inc {
					if wire.String(rec.Headers, wire.HeaderAssemblyEvicted) != "true" || !bytes.Contains(rec.Value, []byte(`"evicted":true`)) {
						t.Fatalf("incomplete record not marked evicted: %s", rec.Value)
					}
				}
				if len(inc) != n-maxEntries || s.Assemblies["evicted"] != float64(n-maxEntries) {
					t.Fatalf("%d evicted incomplete records, want %d (%+v)", len(inc), n-maxEntries, s)
				}
			}
		})
	}
}
