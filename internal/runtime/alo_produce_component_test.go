package runtime

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/observe"
	"github.com/sidestream/sidestream/internal/readback"
)

// aloWatch sees, in one order, what the at-least-once produce-failure
// tests assert on: each output the router's producer had acknowledged (a
// client hook, run before the promise, so before the flush that precedes
// any commit returns), each offset commit kfake received, each new group
// member (a JoinGroup without a member ID: one per session), and the
// produce requests it answered with an error.
type aloWatch struct {
	mu       sync.Mutex
	seq      int
	acked    map[string]int // output value -> seq of its first acknowledgement
	commits  []aloCommit
	joins    int
	produces int // the router's produce requests
	failed   int // those answered with code
	code     int16
	fail     func(w *aloWatch) bool // called with mu held, produces counted
}

type aloCommit struct {
	seq       int
	partition int32
	offset    int64
}

var _ kgo.HookProduceRecordUnbuffered = (*aloWatch)(nil)

func (w *aloWatch) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if err != nil || r.Topic != "out" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	if _, ok := w.acked[string(r.Value)]; !ok {
		w.acked[string(r.Value)] = w.seq
	}
}

// install puts the watch on the cluster: after the input is written, so
// every produce request it sees is the router's.
func (w *aloWatch) install(c *kfake.Cluster, group string) {
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		w.mu.Lock()
		defer w.mu.Unlock()
		if req.(*kmsg.JoinGroupRequest).MemberID == "" {
			w.joins++
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.OffsetCommitRequest)
		if r.Group != group {
			return nil, nil, false
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.seq++
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				w.commits = append(w.commits, aloCommit{w.seq, p.Partition, p.Offset})
			}
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.produces++
		if !w.fail(w) {
			return nil, nil, false
		}
		w.failed++
		r := req.(*kmsg.ProduceRequest)
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = w.code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
}

// committedAll reports whether every input partition was committed to
// its end. mu is held.
func (w *aloWatch) committedAll(inputs [][]string) bool {
	at := make([]int64, len(inputs))
	for _, cm := range w.commits {
		at[cm.partition] = max(at[cm.partition], cm.offset)
	}
	for p, vs := range inputs {
		if at[p] < int64(len(vs)) {
			return false
		}
	}
	return true
}

func (w *aloWatch) get(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

// aloProduceRun runs a pass-through at-least-once topology over n inputs
// on 3 partitions (value {"id":i} at partition i%3, offset i/3) with the
// produce requests fail picks answered with code, until every input
// partition was committed to its end. It then
// checks what holds whatever the failure: no record lost (every input
// on the output, read back) and no offset committed before the outputs of
// the records below it were acknowledged.
func aloProduceRun(t *testing.T, n int, code int16, fail func(w *aloWatch) bool) (*running, *aloWatch) {
	t.Helper()
	c := newCluster(t, kfake.SeedTopics(3, "in"))
	brokers := c.ListenAddrs()
	top := compileAt(t, "alo.yaml", `application_id: alo-produce
guarantee: at_least_once
inputs: [{topic: in}]
routing: {default: all}
routes: [{name: all, topic: out}]
dirty: {topic: dirty}
`, brokers, "")
	top.Settings.CommitRecords = 300 // many intervals, so failures fall inside one

	in, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("in"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	inputs := make([][]string, 3) // partition -> offset -> value
	for i := range n {
		v := fmt.Sprintf(`{"id":%d}`, i)
		inputs[i%3] = append(inputs[i%3], v)
		in.Produce(context.Background(), &kgo.Record{Partition: int32(i % 3), Value: []byte(v)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce input: %v", err)
			}
		})
	}
	if err := in.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	in.Close()

	w := &aloWatch{acked: map[string]int{}, code: code, fail: fail}
	w.install(c, top.Settings.ApplicationID)
	// Small batches: an interval's outputs go out in several produce
	// requests, so a failed one can follow acknowledged ones.
	r := start(t, top, "a", WithMaxPollRecords(100), WithKgoOpts(kgo.WithHooks(w), kgo.ProducerBatchMaxBytes(1024)))
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var done bool
		w.get(func() { done = w.committedAll(inputs) })
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the input was not committed to its end: %+v", r.p.Metrics().Snapshot())
		}
	}
	r.stop(t)

	w.get(func() {
		for _, cm := range w.commits {
			for o := int64(0); o < cm.offset && o < int64(len(inputs[cm.partition])); o++ {
				v := inputs[cm.partition][o]
				if at, ok := w.acked[v]; !ok || at > cm.seq {
					t.Fatalf("partition %d committed at offset %d before the output of offset %d (%s) was acknowledged", cm.partition, cm.offset, o, v)
				}
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := readback.ReadCommitted(ctx, brokers, "out")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rec := range recs {
		seen[string(rec.Value)] = true
	}
	t.Logf("%d outputs read back for %d inputs (%d written twice after a rewind)", len(recs), n, len(recs)-len(seen))
	for p, vs := range inputs {
		for o, v := range vs {
			if !seen[v] {
				t.Fatalf("input partition %d offset %d (%s) lost: not on the output", p, o, v)
			}
		}
	}
	return r, w
}

// TestAtLeastOnceProduceErrorRewinds: under at-least-once, the router's
// 10th and 11th produce requests are answered INVALID_RECORD (a record
// the broker rejects: Abort, not Fatal), after earlier requests of the
// same interval were acknowledged (on this machine about 190 outputs are
// then written twice; the log line says how many). The interval commits
// nothing, the consumer goes back to the committed offsets in the same
// group session (one member joined in the whole run), the abort is
// counted, and every input reaches the output with no offset committed
// ahead of its acknowledged outputs. Without the rewind a commit
// overtakes the failed outputs; without the first-polled offsets a
// partition the group never committed is not rewound.
func TestAtLeastOnceProduceErrorRewinds(t *testing.T) {
	r, w := aloProduceRun(t, 3000, kerr.InvalidRecord.Code, func(w *aloWatch) bool {
		return w.produces == 10 || w.produces == 11
	})
	w.get(func() {
		if w.failed != 2 {
			t.Fatalf("failed %d produce requests, want 2", w.failed)
		}
		if w.joins != 1 {
			t.Fatalf("%d group members joined, want 1: a produce failure that is not fatal must not rebuild the session", w.joins)
		}
	})
	m := r.p.Metrics()
	if n := testutil.ToFloat64(m.Aborts.WithLabelValues(observe.AbortProduceError)); n < 1 {
		t.Fatalf("aborts{produce_error} = %v, want the failed intervals counted", n)
	}
	if s := m.Snapshot(); !s.Conserved() || int(s.Consumed) != 3000 {
		t.Fatalf("committed metrics %+v, want 3000 consumed and conserved", s)
	}
}

// TestAtLeastOnceFatalProduceErrorEndsSession: produce requests answered
// UNKNOWN_TOPIC_OR_PARTITION until franz-go gives the records up (a topic
// deleted under the client: Fatal) end the group session: a second
// member joins, the failure is counted, and the new session loses
// nothing and commits nothing ahead of its outputs.
func TestAtLeastOnceFatalProduceErrorEndsSession(t *testing.T) {
	r, w := aloProduceRun(t, 3000, kerr.UnknownTopicOrPartition.Code, func(w *aloWatch) bool {
		return w.produces >= 4 && w.joins < 2
	})
	w.get(func() {
		if w.failed == 0 {
			t.Fatal("no produce request failed")
		}
		if w.joins != 2 {
			t.Fatalf("%d group members joined, want 2: a fatal produce error ends the session", w.joins)
		}
	})
	if n := testutil.ToFloat64(r.p.Metrics().Aborts.WithLabelValues(observe.AbortProduceError)); n < 1 {
		t.Fatalf("aborts{produce_error} = %v, want the fatal failure counted", n)
	}
}
