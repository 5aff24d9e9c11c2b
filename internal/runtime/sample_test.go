package runtime

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/config"
)

// TestSideSamplerSeesCommittedRecordsOnly fails some transactions (as
// TestExactlyOnceAcrossForcedAbort does) and checks that every dirty
// record the sampler was handed is in the committed dirty topic at the
// partition and offset it was handed with: no record of an aborted
// transaction, none twice.
func TestSideSamplerSeesCommittedRecordsOnly(t *testing.T) {
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
	var smu sync.Mutex
	sampled := map[string]string{} // partition/offset -> key
	dups := 0
	r := start(t, top, "a", WithMaxPollRecords(500), WithSideSampler(func(recs []*kgo.Record) {
		smu.Lock()
		defer smu.Unlock()
		for _, rec := range recs {
			if rec.Topic != top.Dirty.Topic {
				t.Errorf("sampled a record of %s", rec.Topic)
			}
			k := fmt.Sprintf("%d/%d", rec.Partition, rec.Offset)
			if _, ok := sampled[k]; ok {
				dups++
			}
			sampled[k] = string(rec.Key)
		}
	}))
	waitConsumed(t, r.p.Metrics(), n, 2*time.Minute)
	r.stop(t)
	if s := r.p.Metrics().Snapshot(); s.Aborts == 0 {
		t.Fatalf("no transaction was aborted: the test proved nothing")
	}
	committed := map[string]string{}
	for _, rec := range readCommitted(t, c.ListenAddrs(), top.Dirty.Topic) {
		committed[fmt.Sprintf("%d/%d", rec.Partition, rec.Offset)] = string(rec.Key)
	}
	smu.Lock()
	defer smu.Unlock()
	if len(sampled) == 0 || dups > 0 {
		t.Fatalf("%d sampled, %d twice", len(sampled), dups)
	}
	for k, key := range sampled {
		if got, ok := committed[k]; !ok || got != key {
			t.Fatalf("sampled %s (key %q) is not that committed dirty record (%q, %v)", k, key, got, ok)
		}
	}
}

// BenchmarkSideSamplesWrap is the cost the web view's sampler adds to
// every record the router writes: a route record passes by (one map
// look-up), a dirty record is kept (lock, append, bounded).
func BenchmarkSideSamplesWrap(b *testing.B) {
	s := &sideSamples{fn: func([]*kgo.Record) {}, topics: []string{"logs.dirty", "orders.late"}, by: map[string][]*kgo.Record{}}
	sink := func(*kgo.Record) {}
	for _, tc := range []struct{ name, topic string }{{"route", "logs.main"}, {"dirty", "logs.dirty"}, {"none", ""}} {
		b.Run(tc.name, func(b *testing.B) {
			produce := s.wrap(sink)
			if tc.topic == "" {
				produce = (*sideSamples)(nil).wrap(sink)
			}
			r := &kgo.Record{Topic: tc.topic}
			b.ReportAllocs()
			for b.Loop() {
				produce(r)
			}
		})
	}
}
