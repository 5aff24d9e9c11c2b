package runtime

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
	"github.com/sidestream/sidestream/internal/wire"
)

// reloadPlans are logs-by-level under g (v1) and the same with the
// error and warn routes' predicates swapped (v2): an ERROR event goes to
// logs.error under v1 and to logs.warn under v2, a WARN event the other
// way.
func reloadPlans(t *testing.T, brokers []string, g config.Guarantee) (v1, v2 *plan.Plan) {
	t.Helper()
	b, err := os.ReadFile(stageonetest.ExamplesDir + "logs-by-level.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), "guarantee: exactly_once", "guarantee: "+string(g), 1)
	swapped := strings.NewReplacer(`when: level == "ERROR"`, `when: level == "WARN"`, `when: level == "WARN"`, `when: level == "ERROR"`).Replace(src)
	v1 = stageonetest.CompileAt(t, stageonetest.ExamplesDir+"v1.yaml", src, brokers, stageonetest.ExamplesDir)
	v2 = stageonetest.CompileAt(t, stageonetest.ExamplesDir+"v2.yaml", swapped, brokers, stageonetest.ExamplesDir)
	if v1.Version == v2.Version || len(plan.ReloadRefusals(v1, v2, plan.Diff(v1, v2))) != 0 {
		t.Fatalf("v2 must be a live change of v1 (versions %s, %s)", v1.Version, v2.Version)
	}
	return v1, v2
}

// topicUnder is the topic an event of kind goes to under version
// (reloadPlans' v1 or v2).
func topicUnder(v1, v2 *plan.Plan, version, kind string) string {
	top := v1
	if version == v2.Version {
		top = v2
		switch kind {
		case gen.KindError:
			kind = gen.KindWarn
		case gen.KindWarn:
			kind = gen.KindError
		}
	}
	route := gen.RouteOf[kind]
	if route == "dirty" {
		return top.Dirty.Topic
	}
	return top.Route(route).Topic
}

// txnWatch cuts the records the producer buffers into the runs between
// two commits (EndTxn under exactly-once, OffsetCommit under
// at-least-once) and keeps the versions each run's records name.
type txnWatch struct {
	mu     sync.Mutex
	cutKey int16
	cur    map[string]bool
	runs   []map[string]bool
}

func (w *txnWatch) OnProduceRecordBuffered(r *kgo.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		w.cur = map[string]bool{}
	}
	w.cur[wire.String(r.Headers, wire.HeaderTopologyVersion)] = true
}

func (w *txnWatch) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != w.cutKey || err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil {
		w.runs = append(w.runs, w.cur)
		w.cur = nil
	}
}

// TestReloadAtBoundary: while records flow, the predicates are swapped
// back and forth by Reload; every event is written once, on the topic
// the version its header names routes it to, and no transaction (no
// run between two offset commits) holds records of two versions.
func TestReloadAtBoundary(t *testing.T) {
	eachGuarantee(t, func(t *testing.T, g config.Guarantee) {
		c := newCluster(t)
		v1, v2 := reloadPlans(t, c.ListenAddrs(), g)
		w := &txnWatch{cutKey: kmsg.EndTxn.Int16()}
		if g == config.AtLeastOnce {
			w.cutKey = kmsg.OffsetCommit.Int16()
		}
		r := start(t, v1, "a", WithKgoOpts(kgo.WithHooks(w)))
		stop := produceWhile(t, c.ListenAddrs(), "logs")
		for i := range 6 {
			before := r.p.Metrics().Snapshot().Consumed
			waitConsumed(t, r.p.Metrics(), int(before)+300, time.Minute)
			next := []*plan.Plan{v2, v1}[i%2]
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := r.p.Reload(ctx, next)
			cancel()
			if err != nil {
				t.Fatalf("reload %d: %v", i, err)
			}
			if got := r.p.Version(); got != next.Version {
				t.Fatalf("reload %d: routing with %s, want %s", i, got, next.Version)
			}
		}
		all := stop()
		waitConsumed(t, r.p.Metrics(), len(all), 2*time.Minute)
		r.stop(t)
		verifyVersions(t, v1, v2, all, readCommitted(t, c.ListenAddrs(), v1.OutputTopics()...), g == config.ExactlyOnce)
		w.mu.Lock()
		defer w.mu.Unlock()
		seen := map[string]bool{}
		for i, run := range w.runs {
			if len(run) > 1 {
				t.Fatalf("commit run %d holds records of versions %v", i, run)
			}
			for v := range run {
				seen[v] = true
			}
		}
		if !seen[v1.Version] || !seen[v2.Version] || len(seen) != 2 {
			t.Fatalf("versions written %v, want %s and %s", seen, v1.Version, v2.Version)
		}
	})
}

// produceWhile writes generated events to topic in small batches until
// the returned stop is called; stop returns every event written.
func produceWhile(t *testing.T, brokers []string, topic string) func() map[string]gen.Event {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]gen.Event{}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		g := gen.New(5)
		for {
			select {
			case <-done:
				return
			default:
			}
			for range 100 {
				ev := g.Next()
				events[ev.ID] = ev
				cl.Produce(context.Background(), &kgo.Record{Key: ev.Key, Value: ev.Value}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			if err := cl.Flush(context.Background()); err != nil {
				t.Errorf("flush: %v", err)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() map[string]gen.Event {
		close(done)
		<-finished
		cl.Close()
		return events
	}
}

// verifyVersions checks every event appears on the topic its version
// header routes it to: exactly once (once) or at least once.
func verifyVersions(t *testing.T, v1, v2 *plan.Plan, events map[string]gen.Event, recs []*kgo.Record, once bool) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range recs {
		id := gen.IDOf(r.Key, r.Value)
		ev, ok := events[id]
		if !ok {
			t.Fatalf("record on %s with unknown id %q", r.Topic, id)
		}
		seen[id]++
		v := wire.String(r.Headers, wire.HeaderTopologyVersion)
		if v != v1.Version && v != v2.Version {
			t.Fatalf("id %s on %s names version %q, want %s or %s", id, r.Topic, v, v1.Version, v2.Version)
		}
		if want := topicUnder(v1, v2, v, ev.Kind); r.Topic != want {
			t.Fatalf("id %s (kind %s) on %s under version %s, want %s", id, ev.Kind, r.Topic, v, want)
		}
	}
	for id := range events {
		if n := seen[id]; n == 0 || (once && n > 1) {
			t.Fatalf("id %s written %d times (%d events, %d records)", id, n, len(events), len(recs))
		}
	}
}
