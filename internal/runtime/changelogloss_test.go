package runtime

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stagetwo"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestChangelogLoss: a window route's state is committed, then its
// changelog loses it between two runs (records deleted; the topic
// deleted, which the next start recreates empty). Under the default
// (fail) the next run does not process: nothing of the repartition topic
// is committed, /readyz names the topic, the partition and the offsets,
// and the loss is counted. With state.on_changelog_loss: start_empty the
// run proceeds and counts it so; a later run under fail then starts
// without a word, because the accepted loss is marked in the changelog.
func TestChangelogLoss(t *testing.T) {
	for _, how := range []string{wire.LossRecordsDeleted, wire.LossChangelogEmpty} {
		t.Run(how, func(t *testing.T) {
			c := newCluster(t)
			brokers := c.ListenAddrs()
			top := windowTopology(t, brokers)
			rt := top.Routes[0]
			g := gen.New(31)
			producePhase(t, brokers, g, 3000)
			a := start(t, top, "a")
			drain(t, a, 3000)
			a.stop(t)

			loseChangelog(t, brokers, rt.Window.ChangelogTopic, how)

			// More input, so stage two has records of every service to process.
			producePhase(t, brokers, g, 3000)
			rep := rt.Window.RepartitionTopic
			b := start(t, top, "b", WithLossRecheck(500*time.Millisecond))
			loss := func(r *running, action string) float64 {
				return testutil.ToFloat64(r.p.Metrics().ChangelogLoss.WithLabelValues("errors", how, action))
			}
			deadline := time.Now().Add(time.Minute)
			for loss(b, "fail") < 2 { // seen, and seen again at the recheck
				if time.Now().After(deadline) {
					t.Fatalf("no loss reported: %+v", b.p.Metrics().Snapshot())
				}
				time.Sleep(20 * time.Millisecond)
			}
			ok, why := b.p.Ready()
			if ok || !strings.Contains(why, "changelog "+rt.Window.ChangelogTopic+" partition ") ||
				!strings.Contains(why, "the task does not process") || !strings.Contains(why, "offset") {
				t.Fatalf("readyz = %v %q", ok, why)
			}
			if h, _ := b.p.Healthy(); !h {
				t.Fatal("a router waiting on a changelog loss must stay healthy")
			}
			if n := testutil.ToFloat64(b.p.Metrics().Repartitioned.WithLabelValues(rep)); n != 0 {
				t.Fatalf("stage two committed %v records past a changelog loss", n)
			}
			b.stop(t)
			t.Logf("readyz: %s", why)

			// start_empty: the run goes on and counts what it accepted.
			s := start(t, startEmpty(top), "s")
			drainAll(t, 3000, b, s)
			s.stop(t)
			if loss(s, "start_empty") == 0 || loss(s, "fail") != 0 {
				t.Fatalf("start_empty: loss counted %v (start_empty) %v (fail)", loss(s, "start_empty"), loss(s, "fail"))
			}

			// The accepted loss is not reported again.
			producePhase(t, brokers, g, 500)
			d := start(t, top, "d")
			drainAll(t, 500, d)
			d.stop(t)
			if n := testutil.ToFloat64(d.p.Metrics().ChangelogLoss.WithLabelValues("errors", how, "fail")); n != 0 {
				t.Fatalf("an accepted loss was reported again (%v)", n)
			}
			if s := d.p.Metrics().Snapshot(); s.Aggregated+s.Late == 0 {
				t.Fatalf("the run after start_empty processed nothing in stage two: %+v", s)
			}
		})
	}
}

// drainAll waits until the runs together have consumed inputs input
// records of this phase and stage two has taken every record they routed.
func drainAll(t *testing.T, inputs int, rs ...*running) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var in, routed, stage2 float64
		for _, r := range rs {
			m := r.p.Metrics()
			in += testutil.ToFloat64(m.Consumed.WithLabelValues("logs"))
			routed += float64(m.Snapshot().Routed)
			stage2 += testutil.ToFloat64(m.Repartitioned.WithLabelValues(r.p.top.Routes[0].Window.RepartitionTopic))
		}
		if int(in) >= inputs && stage2 >= routed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained: %v inputs of %d, %v of %v routed records through stage two", in, inputs, stage2, routed)
		}
	}
}

// loseChangelog makes a changelog lose its state between two runs: its
// records deleted (wire.LossRecordsDeleted) or the topic deleted, which the
// next start recreates empty (wire.LossChangelogEmpty).
func loseChangelog(t *testing.T, brokers []string, topic, how string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	switch how {
	case wire.LossRecordsDeleted:
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := adm.DeleteRecords(ctx, ends.Offsets())
		if err != nil || resp.Error() != nil {
			t.Fatalf("delete records: %v %v", err, resp.Error())
		}
	case wire.LossChangelogEmpty:
		if _, err := adm.DeleteTopic(ctx, topic); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("loseChangelog: no way to lose %q", how)
	}
}

// startEmpty is top with state.on_changelog_loss: start_empty.
func startEmpty(top *plan.Plan) *plan.Plan {
	empty := *top
	empty.Settings.State.OnChangelogLoss = config.ChangelogLossStartEmpty
	return &empty
}

// TestChangelogLossAssembly: the same for an assembly route, its
// changelog topic deleted between two runs (the next start recreates it
// empty): fail stops stage two with the reason; start_empty goes on, and
// orders whose first half was lost end incomplete, not missing.
func TestChangelogLossAssembly(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(6, "order-parts"))
	brokers := c.ListenAddrs()
	top := exampleAt(t, "../../examples/assemble-orders.yaml", brokers)
	ar := top.Assemblies()[0]
	parts, _ := gen.OrderParts(7, 600, 6)
	half := len(parts) / 2
	produceParts(t, brokers, parts[:half])
	a := start(t, top, "a")
	// Done with the first half, parts held open: state only the
	// changelog holds.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		m := a.p.Metrics()
		if testutil.ToFloat64(m.Consumed.WithLabelValues("order-parts")) >= float64(half) &&
			testutil.ToFloat64(m.Repartitioned.WithLabelValues(ar.Assembly.RepartitionTopic)) >= testutil.ToFloat64(m.RouteIn.WithLabelValues(ar.Name)) &&
			sumGauge(m, ar.Name) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first half not processed: %+v", a.p.Metrics().Snapshot())
		}
	}
	a.stop(t)
	loseChangelog(t, brokers, ar.Assembly.ChangelogTopic, wire.LossChangelogEmpty)
	produceParts(t, brokers, parts[half:])

	b := start(t, top, "b", WithLossRecheck(time.Hour))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if ok, why := b.p.Ready(); !ok && strings.Contains(why, ar.Assembly.ChangelogTopic) && strings.Contains(why, "whose state it held") {
			break
		}
		if time.Now().After(deadline) {
			ok, why := b.p.Ready()
			t.Fatalf("no loss reported: %v %q", ok, why)
		}
	}
	if n := testutil.ToFloat64(b.p.Metrics().ChangelogLoss.WithLabelValues(ar.Name, wire.LossChangelogEmpty, "fail")); n == 0 {
		t.Fatal("the loss was not counted")
	}
	b.stop(t)

	s := start(t, startEmpty(top), "s")
	ms := []*metrics.Metrics{a.p.Metrics(), b.p.Metrics(), s.p.Metrics()}
	for deadline := time.Now().Add(time.Minute); !assemblyDone(top, ms, len(parts)); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("start_empty run not done: %+v", s.p.Metrics().Snapshot())
		}
	}
	s.stop(t)
	if n := testutil.ToFloat64(s.p.Metrics().ChangelogLoss.WithLabelValues(ar.Name, wire.LossChangelogEmpty, "start_empty")); n == 0 {
		t.Fatal("start_empty did not count the accepted loss")
	}
	for _, m := range ms {
		if sn := m.Snapshot(); !sn.Conserved() {
			t.Fatalf("conservation: %+v", sn)
		}
	}
}

// TestChangelogLossDirect: a window route with repartition: false has no
// repartition topic whose committed offset could witness its state; the
// witness is the metadata committed with its input offsets. Its changelog
// deleted between two runs (the next start recreates it empty), a run
// under fail stops exactly the partitions whose changelog held state,
// naming the witness, while a partition whose changelog never held any
// starts empty and processes. start_empty accepts the loss; a later run
// under fail starts without a word.
func TestChangelogLossDirect(t *testing.T) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	top := compileVariant(t, brokers, [2]string{"      emit: update\n", "      emit: update\n      repartition: false\n"})
	rt := top.Routes[0]
	if !rt.Window.Direct {
		t.Fatal("repartition: false did not compile to a direct window")
	}
	rep := rt.Window.RepartitionTopic
	services := []string{"checkout", "payments", "search", "auth", "inventory", "shipping", "profile", "gateway"}
	partOf := func(svc string) int32 {
		return stagetwo.KeyPartition(stagetwo.NewPartitioner(top), "logs", []byte(svc), 6)
	}
	// The first run writes the services of two partitions (held); the
	// others reach partitions that never held state.
	held := map[int32]bool{partOf(services[0]): true, partOf(services[1]): true}
	var first, others []string
	for _, s := range services {
		if held[partOf(s)] {
			first = append(first, s)
		} else {
			others = append(others, s)
		}
	}
	if len(others) == 0 {
		t.Fatalf("every service hashes to partitions %v: no partition without state to check", held)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ts := int64(1_790_000_000_000)
	produce := func(svcs []string, rounds int) int {
		var recs []*kgo.Record
		for range rounds {
			for _, s := range svcs {
				ts += 100
				recs = append(recs, &kgo.Record{Key: []byte(s),
					Value: fmt.Appendf(nil, `{"id":"%s-%d","ts":%d,"level":"ERROR","service":%q,"latency_ms":5}`, s, ts, ts, s)})
			}
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	lost := func(r *running) map[int32]bool {
		out := map[int32]bool{}
		for _, p := range r.p.obs.LostPartitions(rep) {
			out[p] = true
		}
		return out
	}
	count := func(r *running, action string) float64 {
		return testutil.ToFloat64(r.p.Metrics().ChangelogLoss.WithLabelValues(rt.Name, wire.LossChangelogEmpty, action))
	}

	a := start(t, top, "a")
	drain(t, a, produce(first, 50))
	a.stop(t)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	ends, err := adm.ListEndOffsets(ctx, rt.Window.ChangelogTopic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if (o.Offset > 0) != held[o.Partition] {
			t.Fatalf("changelog partition %d ends at %d before the loss; want state exactly in %v", o.Partition, o.Offset, held)
		}
	})
	loseChangelog(t, brokers, rt.Window.ChangelogTopic, wire.LossChangelogEmpty)

	// The partitions that never held state restore empty and process.
	b := start(t, top, "b", WithLossRecheck(time.Hour))
	drain(t, b, produce(others, 20))
	if ok, why := b.p.Ready(); !ok || len(lost(b)) != 0 || count(b, "fail") != 0 {
		t.Fatalf("partitions without state: readyz %v %q, lost %v", ok, why, lost(b))
	}
	// Those that held it stop, with the reason.
	heldRecs := produce(first, 20)
	for deadline := time.Now().Add(time.Minute); len(lost(b)) < len(held); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("lost partitions %v, want %v", lost(b), held)
		}
	}
	if got := lost(b); !maps.Equal(got, held) {
		t.Fatalf("lost partitions %v, want those that held state %v", got, held)
	}
	ok, why := b.p.Ready()
	if ok || !strings.Contains(why, rt.Window.ChangelogTopic) || !strings.Contains(why, "record that route "+rt.Name+" held state in it") {
		t.Fatalf("readyz = %v %q", ok, why)
	}
	if count(b, "fail") == 0 {
		t.Fatal("the loss was not counted")
	}
	b.stop(t)
	t.Logf("readyz: %s", why)

	s := start(t, startEmpty(top), "s")
	drain(t, s, heldRecs)
	s.stop(t)
	if count(s, "start_empty") == 0 || count(s, "fail") != 0 {
		t.Fatalf("start_empty: loss counted %v (start_empty) %v (fail)", count(s, "start_empty"), count(s, "fail"))
	}

	d := start(t, top, "d")
	drain(t, d, produce(services, 20))
	d.stop(t)
	if n := count(d, "fail"); n != 0 || len(lost(d)) != 0 {
		t.Fatalf("an accepted loss was reported again (%v, partitions %v)", n, lost(d))
	}
}
