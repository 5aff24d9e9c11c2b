package runtime

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/plan"
)

func windowTopology(t *testing.T, brokers []string) *plan.Plan {
	t.Helper()
	return compileVariant(t, brokers)
}

// TestWindowRouteEndToEnd runs a tumbling window with a 1s grace over the
// generated log stream (events up to 5s out of order, so many are late),
// stops the router mid-run and starts a new one that restores the state
// from the changelog, then checks every ERROR event is counted exactly
// once: in the final result of its window or on the late route. The
// first router writes the repartition records' seven text headers
// (topics.repartition_format: headers, the first bounce of a rolling
// upgrade), the second the envelope: each reads what the other wrote.
func TestWindowRouteEndToEnd(t *testing.T) {
	c := newCluster(t)
	top := windowTopology(t, c.ListenAddrs())
	old := windowTopology(t, c.ListenAddrs())
	old.Settings.Topics.RepartitionFormat = config.RepartitionHeaders
	n := 30_000
	events := produceEvents(t, c.ListenAddrs(), "logs", n, 21)
	a := start(t, old, "a", WithMaxPollRecords(2000))
	waitConsumed(t, a.p.Metrics(), n/2, time.Minute)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if s := a.p.Metrics().Snapshot(); s.Aggregated+s.Late >= 200 {
			break // stage two has committed state: the next run must restore it
		}
		if time.Now().After(deadline) {
			t.Fatalf("stage two processed nothing: %+v", a.p.Metrics().Snapshot())
		}
	}
	a.stop(t)
	sa := a.p.Metrics().Snapshot()

	// Close every window: one far-future event per service.
	flushTS := gen.New(21).Base + int64(n)*10 + 3_600_000
	flushes := flushEveryPartition(t, c.ListenAddrs(), flushTS)

	b := start(t, top, "a")
	total := n + flushes
	deadline := time.Now().Add(2 * time.Minute)
	for {
		sb := b.p.Metrics().Snapshot()
		inputs := testutil.ToFloat64(a.p.Metrics().Consumed.WithLabelValues("logs")) + testutil.ToFloat64(b.p.Metrics().Consumed.WithLabelValues("logs"))
		rep := top.Routes[0].Window.RepartitionTopic
		stage2 := testutil.ToFloat64(a.p.Metrics().Repartitioned.WithLabelValues(rep)) + testutil.ToFloat64(b.p.Metrics().Repartitioned.WithLabelValues(rep))
		// Every input and every repartitioned ERROR record is consumed
		// (stage one's dirty records never reach the repartition topic,
		// so Dirty cannot stand in for stage two's progress).
		if int(inputs) >= total && stage2 >= sa.Routed+sb.Routed && marksRead(b) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not done: first run %+v, second run %+v", sa, sb)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.stop(t)
	sb := b.p.Metrics().Snapshot()
	if !sa.Conserved() || !sb.Conserved() {
		t.Fatalf("conservation: first %+v second %+v", sa, sb)
	}
	if sb.Results["first"]+sb.Results["final"] == 0 {
		t.Fatalf("the second run emitted nothing: %+v", sb)
	}
	if r := testutil.ToFloat64(b.p.Metrics().RestoredRecords.WithLabelValues("errors")); r == 0 {
		t.Fatalf("the second run restored no changelog records")
	}

	wantErrors := 0
	for _, ev := range events {
		if ev.Kind == gen.KindError {
			wantErrors++
		}
	}
	late, counted, windows := countFinals(t, c.ListenAddrs(), top, flushTS, wantErrors)
	if late == 0 || counted == 0 {
		t.Fatalf("expected both late records and window results; late %d counted %d", late, counted)
	}
	t.Logf("errors=%d counted=%d late=%d windows=%d", wantErrors, counted, late, windows)
}

// TestWindowIdleAdvance: with idle_timeout set, windows close on a stream
// that has stopped, by the wall clock; without it they stay open.
func TestWindowIdleAdvance(t *testing.T) {
	for _, idle := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(fmt.Sprint("idle=", idle), func(t *testing.T) {
			c := newCluster(t)
			top := windowTopology(t, c.ListenAddrs())
			top.Routes[0].Window.Spec.IdleTimeout = config.Span(idle)
			top.Routes[0].Window.Spec.Grace = 0
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("logs"))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			// Event times 1s before a window end: the watermark needs ~1s
			// of idle advance to close it.
			now := time.Now().UnixMilli()/10_000*10_000 - 1000
			for i := range 5 {
				v := fmt.Sprintf(`{"id":"e-%d","ts":%d,"level":"ERROR","service":"auth","latency_ms":%d}`, i, now+int64(i), i)
				if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte("auth"), Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			r := start(t, top, "a")
			waitConsumedAll(t, r.p.Metrics(), 10, time.Minute) // 5 inputs + 5 repartitioned
			if idle > 0 {
				// ~1 s of idle advance closes the window: awaited, not slept.
				for deadline := time.Now().Add(time.Minute); r.p.Metrics().Snapshot().Results["final"] == 0; time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("idle advance closed no window within a minute: %+v", r.p.Metrics().Snapshot())
					}
				}
			} else {
				// Nothing may close it: a fixed window on purpose, ten
				// times the idle timeout the other case uses.
				time.Sleep(3 * time.Second)
			}
			if idle == 0 {
				// The window waits for the input partitions that never
				// spoke, and /tasks says so.
				held := 0
				for _, ts := range r.p.Tasks() {
					if ts.Topic == top.Routes[0].Window.RepartitionTopic && ts.Route != "" {
						if ts.HeldBy == "" || ts.HeldAt != nil {
							t.Fatalf("task %s[%d] held by %q at %v, want a silent input partition", ts.Topic, ts.Partition, ts.HeldBy, ts.HeldAt)
						}
						held++
					}
				}
				if held == 0 {
					t.Fatal("no window task reported what holds it")
				}
			}
			r.stop(t)
			s := r.p.Metrics().Snapshot()
			if idle == 0 && s.Results["final"]+s.Results["first"] != 0 {
				t.Fatalf("without idle advance the window must stay open: %+v", s)
			}
			if idle > 0 && s.Results["final"] != 1 {
				t.Fatalf("idle advance must close the one window with a final result: %+v", s)
			}
		})
	}
}
