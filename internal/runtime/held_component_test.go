package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/observe"
	"github.com/sidestream/sidestream/internal/plan"
)

// heldVariant is errors-per-service with a stateless route beside the
// window (every record is copied), and extra replacements.
func heldVariant(t *testing.T, brokers []string, g config.Guarantee, repl ...[2]string) *plan.Plan {
	t.Helper()
	base := [][2]string{
		{"match: first", "match: all"},
		{"routes:\n  - name: errors", "guarantee: " + string(g) + "\nroutes:\n  - name: copy\n    topic: logs.copy\n  - name: errors"},
	}
	return compileVariant(t, brokers, append(base, repl...)...)
}

// TestBreakingChangeHoldsOnlyItsRoute: a window route restarted with an
// added aggregate over state written without it is held, alone: the
// stateless route copies every record (before and after the restart),
// the session never fails, /readyz, /tasks and sidestream_route_held
// name the route and what differs, and the held route's committed
// offsets on its repartition topic stay where the first run left them
// while its records wait there.
func TestBreakingChangeHoldsOnlyItsRoute(t *testing.T) {
	eachGuarantee(t, func(t *testing.T, g config.Guarantee) {
		c := newCluster(t)
		brokers := c.ListenAddrs()
		old := heldVariant(t, brokers, g)
		changed := heldVariant(t, brokers, g, [2]string{"        - {name: max_latency, fn: max, of: latency_ms}",
			"        - {name: max_latency, fn: max, of: latency_ms}\n        - {name: smallest, fn: min, of: latency_ms}"})
		rep := old.Routes[1].Window.RepartitionTopic

		n := 2000
		produceEvents(t, brokers, "logs", n, 7)
		a := start(t, old, "a")
		for deadline := time.Now().Add(3 * time.Minute); a.p.Metrics().Snapshot().Aggregated == 0 || a.p.obs.LastCommit().IsZero(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the window aggregated nothing: %+v", a.p.Metrics().Snapshot())
			}
		}
		a.stop(t)
		first := testutil.ToFloat64(a.p.Metrics().Consumed.WithLabelValues("logs"))
		before := repartitionCommitted(t, brokers, old.Settings.ApplicationID, rep)

		b := start(t, changed, "a")
		produceEvents(t, brokers, "logs", n, 8)
		m := b.p.Metrics()
		// A generous ceiling: under the race detector, with the other
		// packages' tests on the same two cores, the second run's first
		// session took over a minute once.
		for deadline := time.Now().Add(3 * time.Minute); first+testutil.ToFloat64(m.Consumed.WithLabelValues("logs")) < float64(2*n) || len(b.p.obs.HeldRoutes()) == 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				ok, why := b.p.Ready()
				t.Fatalf("the runs consumed %v and %v of %d input records, held %v; ready %v %q", first, testutil.ToFloat64(m.Consumed.WithLabelValues("logs")), 2*n, b.p.obs.HeldRoutes(), ok, why)
			}
		}
		if got := b.p.obs.HeldRoutes(); len(got) != 1 || got[0] != "errors" {
			t.Fatalf("held routes %v, want [errors]", got)
		}
		ok, why := b.p.Ready()
		for _, want := range []string{"route errors held", "window.aggregates: added", "smallest", "router reset --route errors", "state_version", "every other route is processing"} {
			if ok || !strings.Contains(why, want) {
				t.Fatalf("/readyz %v %q, want not ready naming %q", ok, why, want)
			}
		}
		if v := testutil.ToFloat64(m.RouteHeld.WithLabelValues("errors")); v != 1 {
			t.Fatalf("sidestream_route_held{route=errors} = %v, want 1", v)
		}
		if v := testutil.ToFloat64(m.Aborts.WithLabelValues(observe.AbortRouteHeld)); v != 1 {
			t.Fatalf("batches abandoned for the held route: %v, want exactly 1 (no rebuild loop)", v)
		}
		marked := 0
		for _, ts := range b.p.Tasks() {
			if ts.Topic == rep {
				if ts.RouteHeld == "" {
					t.Fatalf("/tasks %s[%d] is not marked held", ts.Topic, ts.Partition)
				}
				marked++
			}
		}
		if marked == 0 {
			t.Fatal("/tasks lists no partition of the held route")
		}
		b.stop(t)

		// Every input record is copied or dirty (stage one's dirty
		// records: the generator writes some bad ones).
		copies, dirty := len(readCommitted(t, brokers, "logs.copy")), len(readCommitted(t, brokers, "errors.dirty"))
		if copies+dirty < 2*n || (g == config.ExactlyOnce && copies+dirty != 2*n) || copies < n {
			t.Fatalf("the stateless route wrote %d copies (and %d dirty) of %d inputs", copies, dirty, 2*n)
		}
		after := repartitionCommitted(t, brokers, old.Settings.ApplicationID, rep)
		for p, off := range after {
			if off != before[p] {
				t.Fatalf("the held route's offset of %s[%d] moved from %d to %d", rep, p, before[p], off)
			}
		}
		ends := endOffsets(t, brokers, rep)
		waiting := int64(0)
		for p, end := range ends {
			waiting += end - before[p]
		}
		if waiting <= 0 {
			t.Fatalf("no record of the held route waits in %s (ends %v, committed %v)", rep, ends, before)
		}
	})
}

func repartitionCommitted(t *testing.T, brokers []string, group, topic string) map[int32]int64 {
	t.Helper()
	adm, cl := admin(t, brokers)
	defer cl.Close()
	offs, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			out[o.Partition] = o.At
		}
	})
	return out
}

func endOffsets(t *testing.T, brokers []string, topic string) map[int32]int64 {
	t.Helper()
	adm, cl := admin(t, brokers)
	defer cl.Close()
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

func admin(t *testing.T, brokers []string) (*kadm.Client, *kgo.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	return kadm.NewClient(cl), cl
}
