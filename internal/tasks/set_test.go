package tasks

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
)

type fakeTask struct {
	mu   sync.Mutex
	st   changelog.Store
	part int32
}

func (t *fakeTask) Store() changelog.Store   { return t.st }
func (t *fakeTask) Locker() *sync.Mutex      { return &t.mu }
func (t *fakeTask) ChangelogTopic() string   { return "cl" }
func (t *fakeTask) RepartitionTopic() string { return "rep" }
func (t *fakeTask) Partition() int32         { return t.part }
func (t *fakeTask) RouteName() string        { return "route" }

func newTask(part int32) *fakeTask { return &fakeTask{st: changelog.NewMemory(), part: part} }

// TestSetGenerations: a task built while its partition (or everything)
// was dropped is refused; a drop of another partition does not refuse
// it. Dropped tasks' stores are closed.
func TestSetGenerations(t *testing.T) {
	s := New[*fakeTask](nil)
	_, g := s.buildLock("rep", 1)
	s.Drop(map[string][]int32{"rep": {2}, "other": {1}})
	if !s.putIf(g, "rep", 1, newTask(1)) {
		t.Fatal("a drop of other partitions refused the build")
	}
	_, g = s.buildLock("rep", 2)
	s.Drop(map[string][]int32{"rep": {2}})
	if s.putIf(g, "rep", 2, newTask(2)) {
		t.Fatal("a build that raced with its partition's drop was kept")
	}
	_, g = s.buildLock("rep", 3)
	s.Drop(nil)
	if s.putIf(g, "rep", 3, newTask(3)) {
		t.Fatal("a build that raced with a drop of everything was kept")
	}
	if len(s.All()) != 0 {
		t.Fatalf("Drop(nil) left %d tasks", len(s.All()))
	}

	kept := newTask(4)
	_, g = s.buildLock("rep", 4)
	if !s.putIf(g, "rep", 4, kept) {
		t.Fatal("a quiet build was refused")
	}
	s.Drop(map[string][]int32{"rep": {4}})
	if err := kept.st.Set([]byte("k"), nil); err != changelog.ErrClosed {
		t.Fatalf("the dropped task's store is still open: %v", err)
	}
}

// TestGetOrBuild: concurrent callers get one task from one build; a build
// its partition's drop raced with is discarded (ErrMoved, store closed,
// built not told) and the next build is kept.
func TestGetOrBuild(t *testing.T) {
	s := New[*fakeTask](nil)
	var mu sync.Mutex
	builds, kept := 0, 0
	build := func() (*fakeTask, error) {
		mu.Lock()
		builds++
		mu.Unlock()
		return newTask(1), nil
	}
	built := func(*fakeTask) { kept++ } // under the build lock
	const callers = 8
	got := make([]*fakeTask, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			tk, err := s.GetOrBuild("rep", 1, build, built)
			if err != nil {
				t.Error(err)
			}
			got[i] = tk
		})
	}
	wg.Wait()
	for i := range callers {
		if got[i] != got[0] {
			t.Fatalf("caller %d got task %p, caller 0 %p", i, got[i], got[0])
		}
	}
	if builds != 1 || kept != 1 {
		t.Fatalf("%d builds, %d kept; want 1, 1", builds, kept)
	}

	var raced *fakeTask
	_, err := s.GetOrBuild("rep", 2, func() (*fakeTask, error) {
		s.Drop(map[string][]int32{"rep": {2}}) // a revoke while the store restores
		raced = newTask(2)
		return raced, nil
	}, built)
	if !errors.Is(err, ErrMoved) {
		t.Fatalf("a build its partition's drop raced with: %v, want ErrMoved", err)
	}
	if _, ok := s.Get("rep", 2); ok || kept != 1 {
		t.Fatalf("the stale build was kept (held %v, built told %d times)", ok, kept)
	}
	if err := raced.st.Set([]byte("k"), nil); !errors.Is(err, changelog.ErrClosed) {
		t.Fatalf("the discarded task's store is still open: %v", err)
	}
	if _, err := s.GetOrBuild("rep", 2, build, built); err != nil || kept != 2 {
		t.Fatalf("a quiet build after the race: %v (built told %d times)", err, kept)
	}
}

// TestChangelogRecordsAndCheckpoint: a commit's changelog records are the
// tasks' changes, on their own partition; the offsets produced for the
// stage's changelogs (not others) are what a checkpoint commits, and a
// store that fails it is dropped.
func TestChangelogRecordsAndCheckpoint(t *testing.T) {
	s := New[*fakeTask](map[string]bool{"cl": true})
	tk, err := s.GetOrBuild("rep", 3, func() (*fakeTask, error) { return newTask(3), nil }, func(*fakeTask) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.st.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := tk.st.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	tally := metrics.NewTally()
	recs := s.ChangelogRecords(tally)
	if len(recs) != 1 || recs[0].Topic != "cl" || recs[0].Partition != 3 || string(recs[0].Value) != "1" || tally.Changelog["route"] != 1 {
		t.Fatalf("changelog records %+v, tally %v", recs, tally.Changelog)
	}
	if len(tk.st.Changes()) != 0 {
		t.Fatal("the change set was not cleared")
	}

	// A memory store is no Checkpointer: nothing to commit, nothing told.
	recs[0].Offset = 41
	s.Produced(recs[0])
	s.Checkpoint(time.Time{}, func(*fakeTask, int64) { t.Fatal("a memory store was checkpointed") },
		func(*fakeTask, error) { t.Fatal("a memory store failed a checkpoint") })

	ck := &fakeCheckpointer{Store: changelog.NewMemory()}
	s.Drop(nil)
	ctk, _ := s.GetOrBuild("rep", 3, func() (*fakeTask, error) { return &fakeTask{st: ck, part: 3}, nil }, func(*fakeTask) {})
	s.Produced(&kgo.Record{Topic: "cl", Partition: 3, Offset: 41})
	s.Produced(&kgo.Record{Topic: "cl", Partition: 3, Offset: 40})
	s.Produced(&kgo.Record{Topic: "other", Partition: 3, Offset: 99})
	var done []int64
	s.Checkpoint(time.Time{}, func(_ *fakeTask, off int64) { done = append(done, off) }, func(*fakeTask, error) { t.Fatal("failed") })
	if len(done) != 1 || done[0] != 42 || ck.committed != 42 {
		t.Fatalf("checkpointed %v (store %d), want 42: the offset after the stage's last changelog record", done, ck.committed)
	}
	s.Checkpoint(time.Time{}, func(*fakeTask, int64) { t.Fatal("checkpointed twice for one commit") }, func(*fakeTask, error) {})

	ck.fail = errors.New("disk full")
	s.Produced(&kgo.Record{Topic: "cl", Partition: 3, Offset: 50})
	var failed error
	s.Checkpoint(time.Time{}, func(*fakeTask, int64) { t.Fatal("a failed checkpoint was reported done") }, func(_ *fakeTask, err error) { failed = err })
	if failed == nil {
		t.Fatal("the failed checkpoint was not reported")
	}
	if _, ok := s.Get("rep", 3); ok || ctk == nil {
		t.Fatal("the task whose checkpoint failed is still held")
	}
}

// fakeCheckpointer is a memory store with a checkpoint that may fail.
type fakeCheckpointer struct {
	changelog.Store
	committed int64
	fail      error
}

func (c *fakeCheckpointer) Checkpoint() (int64, bool) { return c.committed, c.committed > 0 }
func (c *fakeCheckpointer) CheckpointTime() time.Time { return time.Time{} }
func (c *fakeCheckpointer) Wipe() error               { return nil }
func (c *fakeCheckpointer) Commit(off int64, _ time.Time) error {
	if c.fail != nil {
		return c.fail
	}
	c.committed = off
	return nil
}
