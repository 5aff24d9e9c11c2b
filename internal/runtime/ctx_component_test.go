package runtime

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/plan"
)

// slowRestore sets up a window router whose restores cannot finish: a
// transaction another producer leaves open on every changelog partition
// keeps the partitions' stable offset below their end, and a restore
// waits for it (up to the transaction timeout + 1 min). waiting reports
// once a restore has asked twice for the stable offset since then.
type slowRestore struct {
	c       *kfake.Cluster
	top     *plan.Plan
	r       *running
	polls   atomic.Int64 // read_committed ListOffsets of the changelog after block
	blocked atomic.Bool
}

func newSlowRestore(t *testing.T) *slowRestore {
	t.Helper()
	s := &slowRestore{c: newCluster(t)}
	s.top = windowTopology(t, s.c.ListenAddrs())
	cl := s.top.Routes[0].Window.ChangelogTopic
	s.c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		s.c.KeepControl()
		r := req.(*kmsg.ListOffsetsRequest)
		if s.blocked.Load() && r.IsolationLevel == 1 {
			for _, rt := range r.Topics {
				if rt.Topic == cl {
					s.polls.Add(1)
				}
			}
		}
		return nil, nil, false
	})
	s.r = start(t, s.top, "a")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if ok, _ := s.r.p.Ready(); ok {
			break
		}
		if time.Now().After(deadline) {
			_, why := s.r.p.Ready()
			t.Fatalf("not ready within a minute: %s", why)
		}
	}
	// The open transaction: one record on every changelog partition.
	blocker, err := kgo.NewClient(kgo.SeedBrokers(s.c.ListenAddrs()...), kgo.TransactionalID("blocker"),
		kgo.TransactionTimeout(5*time.Minute), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = blocker.EndTransaction(context.Background(), kgo.TryAbort)
		blocker.Close()
	})
	if err := blocker.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(6) {
		if err := blocker.ProduceSync(context.Background(), &kgo.Record{Topic: cl, Partition: p, Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s.blocked.Store(true)
	return s
}

// waitRestoring waits until a restore is waiting for the open transaction.
func (s *slowRestore) waitRestoring(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); s.polls.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no restore waited for the open transaction within a minute (%d polls)", s.polls.Load())
		}
	}
}

// TestShutdownDuringSlowRestore: cancelling Run's context (SIGTERM)
// while a task's restore waits for an open transaction on its changelog
// ends Run within shutdown_timeout, not when the restore gives up.
func TestShutdownDuringSlowRestore(t *testing.T) {
	s := newSlowRestore(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.ListenAddrs()...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	now := time.Now().UnixMilli()
	for i := range 20 {
		v := fmt.Sprintf(`{"id":"e-%d","ts":%d,"level":"ERROR","service":"auth","latency_ms":%d}`, i, now+int64(i), i)
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte("auth"), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s.waitRestoring(t)
	limit := s.top.Settings.Shutdown.D()
	began := time.Now()
	s.r.cancel()
	select {
	case err := <-s.r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		t.Logf("Run returned %s after the cancel", time.Since(began))
	case <-time.After(limit):
		t.Errorf("Run did not return within shutdown_timeout (%s) of the cancel while a restore waited", limit)
		<-s.r.done
	}
	s.r.once.Do(func() {}) // stopped here
}

// TestStateQueryClientGone: a state query that has to restore its task
// while the restore waits for an open transaction returns as soon as its
// client goes away (the request's context ends), not when the restore
// gives up.
func TestStateQueryClientGone(t *testing.T) {
	s := newSlowRestore(t)
	h := stateHandler(s.r.p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/state/errors?key=auth", nil).WithContext(ctx))
	}()
	s.waitRestoring(t)
	select {
	case <-done:
		t.Fatalf("the query answered %d %q before its client went away, while the restore cannot finish", rec.Code, rec.Body)
	default:
	}
	began := time.Now()
	cancel()
	select {
	case <-done:
		t.Logf("the query returned %s after its client went away: %d %s", time.Since(began), rec.Code, rec.Body)
		if rec.Code == http.StatusOK {
			t.Errorf("a query whose restore could not finish answered 200: %s", rec.Body)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the query did not return within 10s of its client going away")
		<-done
	}
}
