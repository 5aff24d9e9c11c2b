package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/observe"
)

// produceTxn writes n JSON records to one partition of topic in one
// transaction, committed or aborted: the markers and aborted records are
// offsets a read_committed reader never sees, and must not count as lost.
func produceTxn(t *testing.T, brokers []string, topic string, part int32, n int, commit bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(fmt.Sprintf("gap-writer-%s-%d", topic, part)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		v := fmt.Sprintf(`{"level":"info","service":"api","msg":"m%d"}`, i)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// TestInputGap deletes the head of one input partition while the router
// is stopped. Under on_gap: skip the router counts exactly the deleted
// offsets it never read, on that partition only (a partition with an
// aborted transaction and markers counts nothing), shows the range in
// /tasks and goes on; under fail the router is not ready, names the
// partition and the range, and does not process past it.
func TestInputGap(t *testing.T) {
	for _, policy := range []string{config.GapSkip, config.GapFail} {
		t.Run(policy, func(t *testing.T) {
			c := newCluster(t)
			brokers := c.ListenAddrs()
			top := exampleTopology(t, brokers, config.ExactlyOnce)
			top.Inputs[0].OnGap = policy
			for p := range int32(6) {
				produceTxn(t, brokers, "logs", p, 20, true)
			}
			r := start(t, top, "a")
			waitConsumed(t, r.p.Metrics(), 6*20, time.Minute)
			r.stop(t)

			// While stopped: every partition gets a committed, an
			// aborted and a committed transaction (offsets 21..30,
			// marker 31, aborted 32..36, marker 37, 38..47, marker 48;
			// the first run committed 20, the first marker's offset,
			// which the restarted router never sees as a record).
			for p := range int32(6) {
				produceTxn(t, brokers, "logs", p, 10, true)
				produceTxn(t, brokers, "logs", p, 5, false)
				produceTxn(t, brokers, "logs", p, 10, true)
			}
			adm, cl, err := kclient.NewAdmin(brokers)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx := context.Background()
			or, err := adm.FetchOffsets(ctx, top.Settings.ApplicationID)
			if err != nil {
				t.Fatal(err)
			}
			committed, _ := or.Lookup("logs", 2)
			if committed.At != 20 {
				t.Fatalf("committed offset of logs/2 = %d, want 20", committed.At)
			}
			// Partition 2 loses offsets 20..25 (a marker and 5 records)
			// before they were read; partition 3's deletion stays below
			// the committed offset (nothing lost); the markers and the
			// aborted records of every other partition are no gap.
			del := kadm.Offsets{}
			del.Add(kadm.Offset{Topic: "logs", Partition: 2, At: 26, LeaderEpoch: -1})
			del.Add(kadm.Offset{Topic: "logs", Partition: 3, At: 15, LeaderEpoch: -1})
			dr, err := adm.DeleteRecords(ctx, del)
			if err != nil || dr.Error() != nil {
				t.Fatalf("delete records: %v %v", err, dr.Error())
			}

			r = start(t, top, "a", WithLossRecheck(time.Hour))
			m := r.p.Metrics()
			if policy == config.GapSkip {
				// 6 x 20 new committed records, 5 of partition 2 deleted.
				waitConsumed(t, m, 6*20-5, time.Minute)
				s := m.Snapshot()
				if s.Consumed != 6*20-5 || s.Lost != 6 || !s.Conserved() {
					t.Fatalf("consumed %v, lost %v (want %d, 6): %+v", s.Consumed, s.Lost, 6*20-5, s)
				}
				if v := testutil.ToFloat64(m.InputLost.WithLabelValues("logs", "2")); v != 6 {
					t.Fatalf("lost on logs/2 = %v, want 6", v)
				}
				var found bool
				for _, ts := range r.p.Tasks() {
					if ts.Topic == "logs" && ts.Partition == 2 {
						found = true
						if ts.Lost != 6 || len(ts.Gaps) != 1 || ts.Gaps[0] != (observe.GapRange{From: 20, To: 26, Offsets: 6, Skipped: true}) {
							t.Fatalf("/tasks logs/2: lost %d, gaps %+v", ts.Lost, ts.Gaps)
						}
					} else if ts.Lost != 0 || len(ts.Gaps) != 0 {
						t.Fatalf("/tasks %s/%d: lost %d, gaps %+v; only logs/2 lost records", ts.Topic, ts.Partition, ts.Lost, ts.Gaps)
					}
				}
				if !found {
					t.Fatal("/tasks has no logs/2")
				}
				return
			}
			deadline := time.Now().Add(time.Minute)
			for {
				ok, why := r.p.Ready()
				if !ok && strings.Contains(why, "topic logs partition 2: offsets 20 to 25 (6 offsets)") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("not stopped on the gap within 1m: ready %v, %q", ok, why)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if v := testutil.ToFloat64(m.InputGapStop.WithLabelValues("logs", "2")); v != 1 {
				t.Fatalf("gap stop gauge of logs/2 = %v, want 1", v)
			}
			s := m.Snapshot()
			if s.Lost != 0 {
				t.Fatalf("lost %v under on_gap: fail: nothing may be skipped", s.Lost)
			}
			r.stop(t)
			or, err = adm.FetchOffsets(ctx, top.Settings.ApplicationID)
			if err != nil {
				t.Fatal(err)
			}
			if o, _ := or.Lookup("logs", 2); o.At != 20 {
				t.Fatalf("committed offset of logs/2 moved to %d under on_gap: fail, want 20", o.At)
			}
		})
	}
}

// TestStartLatest: a new group on a start: latest input skips what the
// topic held before it joined (not a gap: nothing was committed), and
// reads what comes after.
func TestStartLatest(t *testing.T) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	top := exampleTopology(t, brokers, config.ExactlyOnce)
	top.Inputs[0].Start = config.StartLatest
	for p := range int32(6) {
		produceTxn(t, brokers, "logs", p, 20, true)
	}
	r := start(t, top, "a")
	deadline := time.Now().Add(time.Minute)
	for ok, _ := r.p.Ready(); !ok; ok, _ = r.p.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("not ready within 1m")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for p := range int32(6) {
		produceTxn(t, brokers, "logs", p, 3, true)
	}
	waitConsumed(t, r.p.Metrics(), 6*3, time.Minute)
	if s := r.p.Metrics().Snapshot(); s.Consumed != 6*3 || s.Lost != 0 {
		t.Fatalf("consumed %v, lost %v; want 18 (only what came after the join), 0", s.Consumed, s.Lost)
	}
}
