package runtime

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/wire"
)

// withAssemblyStores sets how assembly tasks open their stores (memory
// by default); tests inject failing stores with it.
func withAssemblyStores(b changelog.Builder) Opt { return func(o *opts) { o.asmStores = b } }

var errInjectedStore = errors.New("injected store failure")

// faultyStores builds memory stores of which one write (the failAt-th
// Set or Delete over every store it built) fails. The store that failed
// is dead: the runtime must stop its task and never use it again (a use
// counts in usedAfter); a new task of that partition gets a new store,
// restored from the changelog.
type faultyStores struct {
	failAt    int64
	writes    atomic.Int64
	usedAfter atomic.Int64
	mu        sync.Mutex
	builds    map[tp]int
	failed    *tp // the partition whose store failed
}

func newFaultyStores(failAt int64) *faultyStores {
	return &faultyStores{failAt: failAt, builds: map[tp]int{}}
}

func (f *faultyStores) builder() changelog.Builder {
	return func(topic string, part int32) (changelog.Store, error) {
		f.mu.Lock()
		f.builds[tp{topic, part}]++
		f.mu.Unlock()
		return &faultyStore{Store: changelog.NewMemory(), f: f, at: tp{topic, part}}, nil
	}
}

// failedPartition is the partition whose store failed and how many
// stores were built for it.
func (f *faultyStores) failedPartition() (tp, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		return tp{}, 0, false
	}
	return *f.failed, f.builds[*f.failed], true
}

type faultyStore struct {
	changelog.Store
	f    *faultyStores
	at   tp
	dead atomic.Bool
}

func (s *faultyStore) use() {
	if s.dead.Load() {
		s.f.usedAfter.Add(1)
	}
}

func (s *faultyStore) write() error {
	s.use()
	if s.f.writes.Add(1) == s.f.failAt {
		s.dead.Store(true)
		s.f.mu.Lock()
		at := s.at
		s.f.failed = &at
		s.f.mu.Unlock()
		return errInjectedStore
	}
	return nil
}

func (s *faultyStore) Set(k, v []byte) error {
	if err := s.write(); err != nil {
		return err
	}
	return s.Store.Set(k, v)
}

func (s *faultyStore) Delete(k []byte) error {
	if err := s.write(); err != nil {
		return err
	}
	return s.Store.Delete(k)
}

func (s *faultyStore) Get(k []byte) ([]byte, bool, error) { s.use(); return s.Store.Get(k) }

func (s *faultyStore) Range(p []byte, fn func(k, v []byte) bool) error {
	s.use()
	return s.Store.Range(p, fn)
}

func (s *faultyStore) Changes() []changelog.Change { s.use(); return s.Store.Changes() }

// checkStoreFailure: the injected failure happened, the failed store was
// never used again and its partition got a new task.
func checkStoreFailure(t *testing.T, f *faultyStores) {
	t.Helper()
	at, builds, ok := f.failedPartition()
	if !ok {
		t.Fatalf("no store write failed (%d writes, fault at %d): the test exercised nothing", f.writes.Load(), f.failAt)
	}
	if n := f.usedAfter.Load(); n > 0 {
		t.Errorf("the failed store of %s[%d] was used %d times after it failed: its task did not stop", at.topic, at.partition, n)
	}
	if builds < 2 {
		t.Errorf("%s[%d]: %d store(s) built, want a new task restored after the failure", at.topic, at.partition, builds)
	}
}

// checkNoStateDirty: no dirty record came from a store failure (stage
// two or an internal error); stage one's decode failures are expected.
func checkNoStateDirty(t *testing.T, brokers []string, dirtyTopic string, inputs ...string) {
	t.Helper()
	for _, r := range readCommitted(t, brokers, dirtyTopic) {
		src, reason := wire.String(r.Headers, wire.HeaderTopic), wire.String(r.Headers, wire.HeaderReason)
		ok := false
		for _, in := range inputs {
			ok = ok || src == in
		}
		if !ok || reason == "internal_error" || reason == wire.ReasonStateError {
			t.Errorf("dirty record from %s with reason %q (stage %q, error %q): a store error must abort, never dirty",
				src, reason, wire.String(r.Headers, wire.HeaderStage), wire.String(r.Headers, wire.HeaderError))
		}
	}
}

// TestWindowStoreErrorAborts: a window store write that fails mid-run
// aborts the transaction (at-least-once: commits nothing, not even from
// the revoke that leaving the group runs) and stops the task: no dirty
// record, the failed store never used again (its changes are never
// written), the task rebuilt from its changelog and, exactly-once, every
// ERROR event still counted exactly once.
func TestWindowStoreErrorAborts(t *testing.T) {
	eachGuarantee(t, testWindowStoreError)
}

func testWindowStoreError(t *testing.T, g config.Guarantee) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	top := windowTopology(t, brokers)
	top.Settings.Guarantee = g
	n := 10_000
	events := produceEvents(t, brokers, "logs", n, 23)
	flushTS := gen.New(23).Base + int64(n)*10 + 3_600_000
	total := n + flushEveryPartition(t, brokers, flushTS)
	f := newFaultyStores(400)
	r := start(t, top, "a", WithStoreBuilder(f.builder()), WithMaxPollRecords(1000))
	rep := top.Routes[0].Window.RepartitionTopic
	m := r.p.Metrics()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		s := m.Snapshot()
		if int(testutil.ToFloat64(m.Consumed.WithLabelValues("logs"))) >= total &&
			testutil.ToFloat64(m.Repartitioned.WithLabelValues(rep)) >= s.Routed && marksRead(r) {
			break
		}
		if time.Now().After(deadline) {
			checkStoreFailure(t, f)
			t.Fatalf("not done (records lost?): %+v", s)
		}
	}
	r.stop(t)
	checkStoreFailure(t, f)
	if s := m.Snapshot(); !s.Conserved() {
		t.Fatalf("conservation: %+v", s)
	}
	checkNoStateDirty(t, brokers, top.Dirty.Topic, "logs")
	if g == config.AtLeastOnce {
		return // the replay after the failure may count records twice
	}
	wantErrors := 0
	for _, ev := range events {
		if ev.Kind == gen.KindError {
			wantErrors++
		}
	}
	countFinals(t, brokers, top, flushTS, wantErrors)
}

// TestAssemblyStoreErrorAborts: the same for an assembly store: the
// transaction aborts, the task stops and is rebuilt from its changelog,
// and every ID is assembled or expired exactly as the generator says
// (checkAssemblyOutputs refuses any dirty record but bad ids).
func TestAssemblyStoreErrorAborts(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(6, "order-parts"))
	brokers := c.ListenAddrs()
	top := exampleAt(t, "../../examples/assemble-orders.yaml", brokers)
	parts, exp := gen.OrderParts(9, 3000, 6)
	produceParts(t, brokers, parts)
	f := newFaultyStores(1500)
	r := start(t, top, "a", withAssemblyStores(f.builder()), WithMaxPollRecords(500))
	ms := []*metrics.Metrics{r.p.Metrics()}
	for deadline := time.Now().Add(2 * time.Minute); !assemblyDone(top, ms, len(parts)); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			checkNoStateDirty(t, brokers, top.Dirty.Topic, top.InputTopics()...)
			t.Fatalf("not done: %+v", r.p.Metrics().Snapshot())
		}
	}
	r.stop(t)
	checkStoreFailure(t, f)
	if s := r.p.Metrics().Snapshot(); !s.Conserved() {
		t.Fatalf("conservation: %+v", s)
	}
	checkAssemblyOutputs(t, brokers, top, exp)
}
