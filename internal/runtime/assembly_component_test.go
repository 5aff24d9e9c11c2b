package runtime

import (
	"context"
	"encoding/json"
	"slices"
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
	"github.com/sidestream/sidestream/internal/wire"
)

func produceParts(t testing.TB, brokers []string, parts []gen.Part) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, p := range parts {
		r := &kgo.Record{Topic: p.Topic, Key: p.Key, Value: p.Value}
		if p.TS > 0 {
			r.Timestamp = time.UnixMilli(p.TS)
		}
		cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// assemblyDone: every input consumed, every part through stage two, no
// assembly open.
func assemblyDone(top *plan.Plan, ms []*metrics.Metrics, inputs int) bool {
	var in, written, staged, open float64
	for _, m := range ms {
		for _, tp := range top.InputTopics() {
			in += testutil.ToFloat64(m.Consumed.WithLabelValues(tp))
		}
		for _, r := range top.Assemblies() {
			written += testutil.ToFloat64(m.RouteIn.WithLabelValues(r.Name))
			staged += testutil.ToFloat64(m.Repartitioned.WithLabelValues(r.Assembly.RepartitionTopic))
		}
	}
	for _, r := range top.Assemblies() {
		// The open gauge of the last run is the current state.
		open += sumGauge(ms[len(ms)-1], r.Name)
	}
	return int(in) >= inputs && staged >= written && open == 0
}

func sumGauge(m *metrics.Metrics, route string) float64 {
	mfs, _ := m.Registry.Gather()
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != metrics.NameAssembliesOpen {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "route" && l.GetValue() == route {
					n += mt.GetGauge().GetValue()
				}
			}
		}
	}
	return n
}

type assembled struct {
	ID       string                     `json:"id"`
	Complete bool                       `json:"complete"`
	Parts    map[string]json.RawMessage `json:"parts"`
	Missing  []string                   `json:"missing"`
}

// checkAssemblyOutputs reads the outputs back read_committed and checks
// them against the generator's expectations, exactly.
func checkAssemblyOutputs(t *testing.T, brokers []string, top *plan.Plan, exp gen.AssemblyExpect) {
	t.Helper()
	ar := top.Assemblies()[0]
	c := ar.Assembly.Spec
	recs := readCommitted(t, brokers, ar.Topic, c.IncompleteTopic, c.DuplicateTopic, top.Dirty.Topic)
	complete, incomplete := map[string]bool{}, map[string]bool{}
	var dups, dirty, optionalIn int
	for _, r := range recs {
		switch r.Topic {
		case top.Dirty.Topic:
			if got := wire.String(r.Headers, wire.HeaderReason); got != wire.ReasonBadAssemblyID {
				t.Errorf("dirty record with reason %q, want %q", got, wire.ReasonBadAssemblyID)
			}
			dirty++
			continue
		case c.DuplicateTopic:
			dups++
			continue
		}
		var a assembled
		if err := json.Unmarshal(r.Value, &a); err != nil {
			t.Fatalf("assembled value %q: %v", r.Value, err)
		}
		if string(r.Key) != a.ID {
			t.Errorf("record key %q, id %q", r.Key, a.ID)
		}
		if r.Topic == ar.Topic {
			want, ok := exp.Complete[a.ID]
			if !ok || !a.Complete || complete[a.ID] {
				t.Errorf("unexpected assembled %s (expected complete: %v, seen before: %v)", r.Value, ok, complete[a.ID])
			}
			complete[a.ID] = true
			for _, p := range want {
				if _, ok := a.Parts[p]; !ok {
					t.Errorf("assembled %s lacks part %q", a.ID, p)
				}
			}
			if len(a.Parts) > len(want) {
				optionalIn += len(a.Parts) - len(want)
			}
			continue
		}
		want, ok := exp.Incomplete[a.ID]
		if !ok || a.Complete || incomplete[a.ID] {
			t.Errorf("unexpected incomplete %s", r.Value)
		}
		incomplete[a.ID] = true
		if !slices.Equal(a.Missing, want) || wire.String(r.Headers, wire.HeaderMissing) != strings.Join(want, ",") {
			t.Errorf("incomplete %s: missing %v (header %q), want %v", a.ID, a.Missing, wire.String(r.Headers, wire.HeaderMissing), want)
		}
	}
	if len(complete) != len(exp.Complete) || len(incomplete) != len(exp.Incomplete) {
		t.Errorf("assembled %d of %d, incomplete %d of %d", len(complete), len(exp.Complete), len(incomplete), len(exp.Incomplete))
	}
	if dirty != exp.Dirty {
		t.Errorf("dirty %d, want %d", dirty, exp.Dirty)
	}
	if exp.Optional == 0 && dups != exp.DuplicateRoute {
		t.Errorf("duplicate route %d, want %d", dups, exp.DuplicateRoute)
	}
	if exp.Optional > 0 && optionalIn+dups != exp.Optional {
		t.Errorf("optional parts: %d assembled + %d on the duplicate route, want %d", optionalIn, dups, exp.Optional)
	}
	t.Logf("assembled=%d incomplete=%d duplicate=%d dirty=%d", len(complete), len(incomplete), dups, dirty)
}

// TestAssembleOrdersExample runs the seed-002 example (event-time TTL)
// over generated parts, stopping the router mid-run so the second run
// restores open assemblies and timers from the changelog, and checks
// every ID is assembled or expired exactly as the generator says.
func TestAssembleOrdersExample(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(6, "order-parts"))
	top := exampleAt(t, "../../examples/assemble-orders.yaml", c.ListenAddrs())
	parts, exp := gen.OrderParts(5, 3000, 6)
	// The first half, then a stop: orders whose parts straddle the cut
	// are open in the changelog, and the second run must restore them.
	half := len(parts) / 2
	produceParts(t, c.ListenAddrs(), parts[:half])
	a := start(t, top, "a", WithMaxPollRecords(500))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		m := a.p.Metrics()
		written := testutil.ToFloat64(m.RouteIn.WithLabelValues("assembled"))
		staged := testutil.ToFloat64(m.Repartitioned.WithLabelValues(top.Assemblies()[0].Assembly.RepartitionTopic))
		if int(testutil.ToFloat64(m.Consumed.WithLabelValues("order-parts"))) >= half && staged >= written {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first half not processed: %+v", m.Snapshot())
		}
	}
	a.stop(t)
	if sumGauge(a.p.Metrics(), "assembled") == 0 {
		t.Fatal("no assembly open at the cut: the restore is not exercised")
	}
	produceParts(t, c.ListenAddrs(), parts[half:])
	b := start(t, top, "a")
	ms := []*metrics.Metrics{a.p.Metrics(), b.p.Metrics()}
	for deadline := time.Now().Add(2 * time.Minute); !assemblyDone(top, ms, len(parts)); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not done: first %+v second %+v", a.p.Metrics().Snapshot(), b.p.Metrics().Snapshot())
		}
	}
	b.stop(t)
	for _, m := range ms {
		if s := m.Snapshot(); !s.Conserved() {
			t.Fatalf("conservation: %+v", s)
		}
	}
	if r := testutil.ToFloat64(b.p.Metrics().RestoredRecords.WithLabelValues("assembled")); r == 0 {
		t.Fatalf("the second run restored no changelog records")
	}
	checkAssemblyOutputs(t, c.ListenAddrs(), top, exp)
}

// TestOrderPaymentShipment: three topics keyed by three different ids,
// repartitioned by the order id, processing-time TTL (shortened here),
// shipment optional.
func TestOrderPaymentShipment(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(3, "orders", "payments", "shipments"))
	top := exampleAt(t, "../../examples/order-payment-shipment.yaml", c.ListenAddrs())
	top.Assemblies()[0].Assembly.Spec.TTL = config.Duration(8 * time.Second) // room for a loaded machine: all parts of an order are produced together
	parts, exp := gen.OrderPaymentShipment(7, 1500)
	produceParts(t, c.ListenAddrs(), parts)
	r := start(t, top, "a")
	for deadline := time.Now().Add(time.Minute); !assemblyDone(top, []*metrics.Metrics{r.p.Metrics()}, len(parts)); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not done: %+v", r.p.Metrics().Snapshot())
		}
	}
	// Held state: nothing open, completed IDs remembered.
	var id string
	for k := range exp.Complete {
		id = k
		break
	}
	h, ok, err := r.p.AssemblyHeld("order-view", id)
	if err != nil || !ok || h.Open || !h.Completed {
		t.Fatalf("held %q: %+v ok=%v err=%v", id, h, ok, err)
	}
	if _, _, err := r.p.AssemblyHeld("nope", id); err == nil {
		t.Fatal("no error for an unknown route")
	}
	r.stop(t)
	s := r.p.Metrics().Snapshot()
	if !s.Conserved() || int(s.Dropped) != exp.Dropped {
		t.Fatalf("conservation or dropped (want %d): %+v", exp.Dropped, s)
	}
	checkAssemblyOutputs(t, c.ListenAddrs(), top, exp)
}
