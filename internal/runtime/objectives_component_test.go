package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
)

// sloTopology routes every JSON record to main, anything else to dirty,
// with a dirty objective that pauses the inputs past half dirty.
const sloTopology = `application_id: slo-guard
inputs: [{topic: in}]
routing: {default: main}
routes:
  - name: main
    topic: main
dirty:
  topic: bad
  slo: {max_dirty_share: 0.5, records: 100, min_records: 100, on_breach: pause}
`

// produceKeyed writes one record per key k<from>..k<to-1>, each value
// good JSON or not.
func produceKeyed(t *testing.T, brokers []string, topic string, from, to int, good bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < to; i++ {
		v := fmt.Sprintf(`{"n":%d}`, i)
		if !good {
			v = fmt.Sprintf("not json %d", i)
		}
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls cond until it holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A burst of dirty records trips the guard: the inputs stop being
// consumed, /readyz says which objective, and after POST /resume (here
// Processor.Resume) every input record is read back once, on main or
// on dirty, under exactly-once and at-least-once.
func TestObjectivePauseAndResume(t *testing.T) {
	eachGuarantee(t, func(t *testing.T, g config.Guarantee) {
		c := newCluster(t, kfake.SeedTopics(3, "in"))
		brokers := c.ListenAddrs()
		top := stageonetest.CompileAt(t, "slo.yaml", strings.Replace(sloTopology, "application_id: slo-guard", "application_id: slo-guard\nguarantee: "+string(g), 1), brokers, "")
		top.Settings.CommitRecords = 50 // small commits: the guard judges often
		const good, bad, after = 200, 400, 200
		produceKeyed(t, brokers, "in", 0, good, true)
		r := start(t, top, "a", WithMaxPollRecords(20))
		waitConsumed(t, r.p.Metrics(), good, time.Minute)
		if ok, why := r.p.Ready(); !ok {
			t.Fatalf("not ready before the burst: %s", why)
		}
		produceKeyed(t, brokers, "in", good, good+bad, false)
		produceKeyed(t, brokers, "in", good+bad, good+bad+after, true)
		total := good + bad + after
		waitFor(t, time.Minute, "the guard trips", func() bool {
			ok, why := r.p.Ready()
			return !ok && strings.Contains(why, "route dirty objective dirty_share")
		})
		m := r.p.Metrics()
		if v := testutil.ToFloat64(m.Objectives.Paused.WithLabelValues("dirty", "dirty_share")); v != 1 {
			t.Fatalf("sidestream_objective_paused = %v, want 1", v)
		}
		// The inputs stay paused: nothing more is consumed while the loop
		// turns (the poll deadline is the commit interval, 100 ms).
		held := m.Snapshot().Consumed
		if int(held) >= total {
			t.Fatalf("consumed all %d records before the guard stopped the input", total)
		}
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if now := m.Snapshot().Consumed; now != held {
				t.Fatalf("consumed %v -> %v while paused", held, now)
			}
		}
		resumes := 0
		waitFor(t, 2*time.Minute, "every record consumed after resumes", func() bool {
			if ok, _ := r.p.Ready(); !ok {
				if resumed, _ := r.p.Resume(); resumed {
					resumes++
				}
			}
			return int(m.Snapshot().Consumed) >= total
		})
		waitFor(t, time.Minute, "ready after the last resume", func() bool { ok, _ := r.p.Ready(); return ok })
		r.stop(t)
		if resumes == 0 {
			t.Fatal("never resumed")
		}
		recs := readCommitted(t, brokers, "main", "bad")
		seen := map[string]string{}
		for _, rec := range recs {
			k := string(rec.Key)
			if prev, dup := seen[k]; dup {
				t.Fatalf("key %s read twice (%s, %s)", k, prev, rec.Topic)
			}
			seen[k] = rec.Topic
		}
		for i := range total {
			want := "main"
			if i >= good && i < good+bad {
				want = "bad"
			}
			if got := seen[fmt.Sprintf("k%d", i)]; got != want {
				t.Fatalf("k%d on %q, want %q (read back %d of %d)", i, got, want, len(recs), total)
			}
		}
		if s := m.Snapshot(); !s.Conserved() || int(s.Consumed) != total {
			t.Fatalf("metrics %+v, want %d consumed and conserved", s, total)
		}
	})
}

// lagTopology sends every record to two plain routes, each with an
// event-time lag objective (event time: the record's Kafka timestamp,
// the default): main's pauses the inputs on a breach, copy's only
// alerts, so a resume never empties its window.
const lagTopology = `application_id: slo-lag
inputs: [{topic: in}]
routing: {match: all, default: drop}
routes:
  - name: main
    topic: main
    slo: {max_event_time_lag: 1m, records: 50, min_records: 50, on_breach: pause}
  - name: copy
    topic: copy
    slo: {max_event_time_lag: 1m, records: 50, min_records: 50}
dirty:
  topic: bad
`

// produceAt writes records k<from>..k<to-1> of good JSON with Kafka
// timestamp ts (their event time).
func produceAt(t *testing.T, brokers []string, topic string, from, to int, ts time.Time) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < to; i++ {
		r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"n":%d}`, i), Timestamp: ts}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// Records two hours old (a replay, say) breach a plain route's
// event-time lag objective: its value is their lag, the inputs pause and
// /readyz says why. After resumes every record is consumed, and the
// fresh records that follow push the old ones out of copy's window (no
// resume empties it): its value falls under the max, the breach gone.
func TestObjectiveEventTimeLagPause(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(3, "in"))
	brokers := c.ListenAddrs()
	top := stageonetest.CompileAt(t, "slo.yaml", lagTopology, brokers, "")
	top.Settings.CommitRecords = 20 // small commits: the guard judges often
	const old, fresh = 200, 200
	produceAt(t, brokers, "in", 0, old, time.Now().Add(-2*time.Hour))
	r := start(t, top, "a", WithMaxPollRecords(10))
	waitFor(t, time.Minute, "the guard trips", func() bool {
		ok, why := r.p.Ready()
		return !ok && strings.Contains(why, "route main objective event_time_lag is 2h0m")
	})
	m := r.p.Metrics()
	if v, b := testutil.ToFloat64(m.Objectives.Value.WithLabelValues("main", "event_time_lag")), testutil.ToFloat64(m.Objectives.Breached.WithLabelValues("main", "event_time_lag")); v < 7200 || v > 7300 || b != 1 {
		t.Fatalf("value %v s, breached %v: want about 7200 s and 1", v, b)
	}
	if v := testutil.ToFloat64(m.Objectives.Max.WithLabelValues("main", "event_time_lag")); v != 60 {
		t.Fatalf("max %v, want 60 (seconds)", v)
	}
	if v := testutil.ToFloat64(m.Objectives.Paused.WithLabelValues("main", "event_time_lag")); v != 1 {
		t.Fatalf("sidestream_objective_paused = %v, want 1", v)
	}
	held := m.Snapshot().Consumed
	if int(held) >= old {
		t.Fatalf("consumed all %d old records before the guard stopped the input", old)
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if now := m.Snapshot().Consumed; now != held {
			t.Fatalf("consumed %v -> %v while paused", held, now)
		}
	}
	lag := func(route string) (value, breached float64) {
		return testutil.ToFloat64(m.Objectives.Value.WithLabelValues(route, "event_time_lag")),
			testutil.ToFloat64(m.Objectives.Breached.WithLabelValues(route, "event_time_lag"))
	}
	if v, b := lag("copy"); v < 7200 || b != 1 {
		t.Fatalf("copy: value %v s, breached %v: want about 7200 s and 1", v, b)
	}
	produceAt(t, brokers, "in", old, old+fresh, time.Now())
	waitFor(t, 2*time.Minute, "every record consumed after resumes", func() bool {
		if ok, _ := r.p.Ready(); !ok {
			r.p.Resume()
		}
		return int(m.Snapshot().Consumed) >= old+fresh
	})
	waitFor(t, time.Minute, "copy's value falls under the max", func() bool {
		v, b := lag("copy")
		return v < 60 && b == 0
	})
	waitFor(t, time.Minute, "ready", func() bool { ok, _ := r.p.Ready(); return ok })
	r.stop(t)
	for _, topic := range []string{"main", "copy"} {
		if recs := readCommitted(t, brokers, topic); len(recs) != old+fresh {
			t.Fatalf("read back %d records on %s, want %d", len(recs), topic, old+fresh)
		}
	}
}
