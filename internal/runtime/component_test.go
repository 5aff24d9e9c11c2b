package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
)

// exampleTopology loads examples/logs-by-level.yaml pointed at brokers.
func exampleTopology(t testing.TB, brokers []string, guarantee config.Guarantee) *plan.Plan {
	t.Helper()
	return stageonetest.ExampleTopology(t, brokers, guarantee)
}

func testLogger() *slog.Logger {
	if os.Getenv("SIDESTREAM_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// produceEvents writes n generated events and returns them by id.
func produceEvents(t testing.TB, brokers []string, topic string, n int, seed uint64) map[string]gen.Event {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	g := gen.New(seed)
	out := make(map[string]gen.Event, n)
	for range n {
		ev := g.Next()
		out[ev.ID] = ev
		cl.Produce(context.Background(), &kgo.Record{Key: ev.Key, Value: ev.Value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// readCommitted reads every committed record of topics to their end.
func readCommitted(t testing.TB, brokers []string, topics ...string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := readback.ReadCommitted(ctx, brokers, topics...)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// verify checks every generated event appears exactly once, on the topic
// the oracle (gen.RouteOf) names, and nothing else appears.
func verify(t *testing.T, top *plan.Plan, events map[string]gen.Event, recs []*kgo.Record) {
	t.Helper()
	topicOf := map[string]string{"dirty": top.Dirty.Topic}
	for _, r := range top.Routes {
		topicOf[r.Name] = r.Topic
	}
	seen := map[string]int{}
	for _, r := range recs {
		id := gen.IDOf(r.Key, r.Value)
		seen[id]++
		ev, ok := events[id]
		if !ok {
			t.Errorf("record on %s with unknown id %q", r.Topic, id)
			continue
		}
		if want := topicOf[gen.RouteOf[ev.Kind]]; r.Topic != want {
			t.Errorf("id %s (kind %s) on %s, want %s", id, ev.Kind, r.Topic, want)
		}
	}
	var dup, missing int
	for id := range events {
		switch seen[id] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	if dup > 0 || missing > 0 {
		t.Fatalf("%d events: %d duplicated, %d missing (read back %d records)", len(events), dup, missing, len(recs))
	}
}

func waitConsumed(t *testing.T, m *metrics.Metrics, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if int(m.Snapshot().Consumed) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("consumed %v of %d records within %s", m.Snapshot().Consumed, n, limit)
}

// waitConsumedAll waits until n records are consumed in all: input and
// repartitioned records.
func waitConsumedAll(t *testing.T, m *metrics.Metrics, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if s := m.Snapshot(); int(s.Consumed+s.Repartitioned) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s := m.Snapshot()
	t.Fatalf("consumed %v input and %v repartitioned records, want %d in all, within %s", s.Consumed, s.Repartitioned, n, limit)
}

type running struct {
	p      *Processor
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func start(t *testing.T, top *plan.Plan, id string, extra ...Opt) *running {
	t.Helper()
	opts := append([]Opt{WithLogger(testLogger()), WithInstanceID(id)}, extra...)
	p, err := New(top, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{p: p, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- p.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *running) stop(t *testing.T) {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("processor: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("processor did not stop within a minute")
		}
	})
}

func newCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(6, "logs")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestExampleTopologyExactlyOnce(t *testing.T) {
	eachGuarantee(t, func(t *testing.T, g config.Guarantee) {
		n := 100_000
		if testing.Short() {
			n = 10_000
		}
		c := newCluster(t)
		top := exampleTopology(t, c.ListenAddrs(), g)
		events := produceEvents(t, c.ListenAddrs(), "logs", n, 7)
		r := start(t, top, "a")
		waitConsumed(t, r.p.Metrics(), n, 2*time.Minute)
		r.stop(t)
		recs := readCommitted(t, c.ListenAddrs(), top.OutputTopics()...)
		verify(t, top, events, recs)
		s := r.p.Metrics().Snapshot()
		if !s.Conserved() || int(s.Consumed) != n {
			t.Fatalf("metrics not conserved: %+v", s)
		}
		if int(s.Routed+s.Dirty) != len(recs) {
			t.Fatalf("routed %v + dirty %v != %d read back", s.Routed, s.Dirty, len(recs))
		}
	})
}

// TestExactlyOnceAcrossForcedAbort fails the first EndTxn commit and a
// TxnOffsetCommit mid-run with kfake's ControlKey; the aborted batches are
// processed again and a read_committed reader sees every event once.
func TestExactlyOnceAcrossForcedAbort(t *testing.T) {
	n := 30_000
	c := newCluster(t)
	var mu sync.Mutex
	injected := map[string]int{}
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		injected["calls"]++
		if c := injected["calls"]; c != 3 && c != 6 {
			return nil, nil, false
		}
		injected["offset"]++
		return failTxnOffsetCommit(req), nil, true
	})
	top := exampleTopology(t, c.ListenAddrs(), config.ExactlyOnce)
	top.Settings.CommitRecords = 1000 // many transactions, so the 3rd and 6th fail mid-run
	events := produceEvents(t, c.ListenAddrs(), "logs", n, 11)
	r := start(t, top, "a", WithMaxPollRecords(1000))
	waitConsumed(t, r.p.Metrics(), n, 2*time.Minute)
	r.stop(t)
	mu.Lock()
	if injected["offset"] != 2 {
		t.Fatalf("injected %d offset-commit failures, want 2", injected["offset"])
	}
	mu.Unlock()
	if a := r.p.Metrics().Snapshot().Aborts; a != 2 {
		t.Fatalf("aborts = %v, want 2", a)
	}
	verify(t, top, events, readCommitted(t, c.ListenAddrs(), top.OutputTopics()...))
}

// TestExactlyOnceAcrossRebalance runs two members of one group; the second
// joins mid-run and the first leaves later, so partitions move twice with
// transactions open.
func TestExactlyOnceAcrossRebalance(t *testing.T) {
	n := 60_000
	c := newCluster(t)
	top := exampleTopology(t, c.ListenAddrs(), config.ExactlyOnce)
	events := produceEvents(t, c.ListenAddrs(), "logs", n, 13)
	slow := WithMaxPollRecords(500) // small polls keep transactions open across the rebalance
	a := start(t, top, "a", slow)
	waitConsumed(t, a.p.Metrics(), n/6, time.Minute)
	b := start(t, top, "b", slow)
	waitConsumed(t, b.p.Metrics(), 1, time.Minute)
	a.stop(t)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if int(a.p.Metrics().Snapshot().Consumed+b.p.Metrics().Snapshot().Consumed) >= n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.stop(t)
	total := a.p.Metrics().Snapshot().Consumed + b.p.Metrics().Snapshot().Consumed
	if int(total) != n {
		t.Fatalf("committed consumed %v across members, want %d", total, n)
	}
	verify(t, top, events, readCommitted(t, c.ListenAddrs(), top.OutputTopics()...))
}

var _ = errors.New
var _ = fmt.Sprint

// failTxnOffsetCommit answers a TxnOffsetCommit (in a kfake ControlKey
// handler) with REBALANCE_IN_PROGRESS for every partition: an abortable
// error, so the transaction aborts and its batch is processed again.
func failTxnOffsetCommit(req kmsg.Request) kmsg.Response {
	r := req.(*kmsg.TxnOffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, tp := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = tp.Topic
		for _, p := range tp.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = 27 // REBALANCE_IN_PROGRESS: abortable
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// eachGuarantee runs f as a subtest under exactly_once, then
// at_least_once: the two guarantees share one loop and must both hold.
func eachGuarantee(t *testing.T, f func(t *testing.T, g config.Guarantee)) {
	t.Helper()
	for _, g := range []config.Guarantee{config.ExactlyOnce, config.AtLeastOnce} {
		t.Run(string(g), func(t *testing.T) { f(t, g) })
	}
}
