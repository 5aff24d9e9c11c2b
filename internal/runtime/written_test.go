package runtime

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/config"
)

// TestWrittenCountsCommittedOnly fails some transactions after their
// records were produced and acknowledged (their offset commit fails, so
// the transaction aborts and the batch is processed again) and checks
// that the written-records metric of every output topic equals what a
// read_committed reader finds there: records of an aborted transaction
// are acknowledged by the broker but never counted.
func TestWrittenCountsCommittedOnly(t *testing.T) {
	n := 20_000
	c := newCluster(t)
	var mu sync.Mutex
	calls := 0
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		calls++
		fail := calls%3 == 0 && calls <= 12
		mu.Unlock()
		if !fail {
			return nil, nil, false
		}
		return failTxnOffsetCommit(req), nil, true
	})
	top := exampleTopology(t, c.ListenAddrs(), config.ExactlyOnce)
	top.Settings.CommitRecords = 1000
	produceEvents(t, c.ListenAddrs(), "logs", n, 5)
	r := start(t, top, "a", WithMaxPollRecords(500))
	waitConsumed(t, r.p.Metrics(), n, 2*time.Minute)
	r.stop(t)
	m := r.p.Metrics()
	if s := m.Snapshot(); s.Aborts == 0 {
		t.Fatalf("no transaction was aborted: the test proved nothing")
	}
	writers := top.Writers()
	var total float64
	for _, topic := range top.OutputTopics() {
		got := testutil.ToFloat64(m.RouteWritten.WithLabelValues(writers[topic], topic))
		want := len(readCommitted(t, c.ListenAddrs(), topic))
		if got != float64(want) {
			t.Errorf("topic %s (route %s): written metric %.0f, read back %d", topic, writers[topic], got, want)
		}
		total += got
	}
	if total < float64(n) {
		t.Fatalf("written %.0f records in all for %d inputs", total, n)
	}
}
