package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
)

// TestCommitWhenDrained: with a commit_interval of five minutes (longer than every wait here), an
// exactly-once transaction still ends once its poll has drained the
// input, so a read_committed reader sees every record; with
// commit_when_drained off the transaction stays open for the interval
// and the reader sees none of them until the router stops.
func TestCommitWhenDrained(t *testing.T) {
	const n = 2_000
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			c := newCluster(t)
			top := exampleTopology(t, c.ListenAddrs(), config.ExactlyOnce)
			top.Settings.CommitInterval = config.Duration(5 * time.Minute)
			top.Settings.CommitWhenDrained = on
			events := produceEvents(t, c.ListenAddrs(), "logs", n, 11)
			r := start(t, top, "a", WithTransactionTimeout(10*time.Minute))
			if !on {
				waitWritten(t, c.ListenAddrs(), n, top.OutputTopics())
				if stable := stableTotal(t, c.ListenAddrs(), top.OutputTopics()); stable != 0 {
					t.Fatalf("commit_when_drained off: %d records visible before the interval ended", stable)
				}
				r.stop(t) // ends the transaction
				verify(t, top, events, readCommitted(t, c.ListenAddrs(), top.OutputTopics()...))
				return
			}
			waitConsumed(t, r.p.Metrics(), n, 2*time.Minute)
			// Visible while the router runs, its five-minute interval far
			// from over: the drained poll ended the transaction.
			deadline := time.Now().Add(2 * time.Minute)
			for {
				recs := readCommitted(t, c.ListenAddrs(), top.OutputTopics()...)
				if len(recs) >= n {
					verify(t, top, events, recs)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d records visible after 2 minutes with a drained input", len(recs), n)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if s := r.p.Metrics().Snapshot(); !s.Conserved() {
				t.Fatalf("metrics not conserved: %+v", s)
			}
		})
	}
}

// stableTotal is the sum of topics' last stable offsets: the records a
// read_committed reader can see (an open transaction holds it back).
func stableTotal(t *testing.T, brokers []string, topics []string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ls, err := kadm.NewClient(cl).ListCommittedOffsets(context.Background(), topics...)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	ls.Each(func(o kadm.ListedOffset) { total += o.Offset })
	return total
}

// waitWritten waits until topics hold n records, committed or not (their
// high watermarks: an open transaction's records count).
func waitWritten(t *testing.T, brokers []string, n int, topics []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ends, err := adm.ListEndOffsets(context.Background(), topics...)
		total := int64(0)
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if err == nil && total >= int64(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records written within 2 minutes (%v)", total, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDrainedFloor: an interval that ends early on a drained input lasts
// at least a tenth of commit_interval (at most 10 ms) and at least
// drainedShare times the last end, never past the interval.
func TestDrainedFloor(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct{ interval, lastEnd, want time.Duration }{
		{100 * ms, 0, 10 * ms},
		{50 * ms, 0, 5 * ms},
		{100 * ms, 1 * ms, 10 * ms},
		{100 * ms, 5 * ms, 20 * ms},
		{100 * ms, 40 * ms, 100 * ms},
		{time.Second, 30 * ms, 120 * ms},
	} {
		if got := drainedFloor(c.interval, c.lastEnd); got != c.want {
			t.Errorf("drainedFloor(%s, %s) = %s, want %s", c.interval, c.lastEnd, got, c.want)
		}
	}
}
