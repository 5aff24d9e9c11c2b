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
