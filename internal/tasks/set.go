package tasks

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
)

// Task is a task of a stateful stage: the operator of one partition of a
// repartition topic, whose store is a cache of the same partition of a
// changelog topic. Its lock is held while it processes, hands out its
// changes, checkpoints, is closed or answers a state query (the HTTP API
// reads concurrently).
type Task interface {
	Store() changelog.Store
	Locker() *sync.Mutex
	ChangelogTopic() string
	RepartitionTopic() string
	Partition() int32
	RouteName() string
}

// ErrMoved is returned for a build that a drop of its partition raced
// with: the task is discarded, the caller may retry.
var ErrMoved = errors.New("the partition's state was dropped while its task was built")

type key struct {
	topic string
	part  int32
}

// generation identifies the drops a partition has seen.
type generation struct{ epoch, gen uint64 }

// Set holds the tasks of one stateful stage in this process. Memory is
// only ever a cache of what the committed changelog holds: a task is
// built on its partition's first records (or a state query) and dropped
// on any revoke or abort.
type Set[T Task] struct {
	mu    sync.Mutex
	tasks map[key]T
	// building serialises the build of one partition's task: a state
	// query, the processing of that partition and (routes without a
	// repartition topic) that partition of every input never build two.
	building map[key]*sync.Mutex
	// A task built while its partition was dropped is stale: epoch counts
	// drops of everything, gens the drops of each partition.
	epoch uint64
	gens  map[key]uint64
	// changelogs are the stage's changelog topics. clNext is, per
	// changelog partition, the offset after the last changelog record
	// produced in the current transaction: the local checkpoint once the
	// transaction commits.
	changelogs map[string]bool
	offMu      sync.Mutex
	clNext     map[key]int64
}

// New is an empty set for a stage whose changelog topics are changelogs.
func New[T Task](changelogs map[string]bool) *Set[T] {
	return &Set[T]{tasks: map[key]T{}, building: map[key]*sync.Mutex{}, gens: map[key]uint64{},
		changelogs: changelogs, clNext: map[key]int64{}}
}

// Drop forgets tasks, all of them (nil) or those of the given
// partitions, and closes their stores: an on-disk store discards what no
// commit made durable. A build in progress for a dropped partition is
// discarded.
func (s *Set[T]) Drop(parts map[string][]int32) {
	s.mu.Lock()
	if parts == nil {
		s.epoch++
	}
	for t, ps := range parts {
		for _, p := range ps {
			s.gens[key{t, p}]++
		}
	}
	var gone []T
	for k, t := range s.tasks {
		if parts == nil || slices.Contains(parts[k.topic], k.part) {
			gone = append(gone, t)
			delete(s.tasks, k)
		}
	}
	s.mu.Unlock()
	if parts == nil {
		s.offMu.Lock()
		clear(s.clNext)
		s.offMu.Unlock()
	}
	for _, t := range gone {
		l := t.Locker()
		l.Lock()
		_ = t.Store().Close()
		l.Unlock()
	}
}

// Get returns the task of a partition, if the set holds it.
func (s *Set[T]) Get(topic string, part int32) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[key{topic, part}]
	return t, ok
}

// putIf stores t unless the partition was dropped since generation g.
func (s *Set[T]) putIf(g generation, topic string, part int32, t T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{topic, part}
	if (generation{s.epoch, s.gens[k]}) != g {
		return false
	}
	s.tasks[k] = t
	return true
}

// buildLock returns the lock that serialises building the task of one
// partition, and the partition's current generation.
func (s *Set[T]) buildLock(topic string, part int32) (*sync.Mutex, generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{topic, part}
	l := s.building[k]
	if l == nil {
		l = &sync.Mutex{}
		s.building[k] = l
	}
	return l, generation{s.epoch, s.gens[k]}
}

// All returns every task the set holds.
func (s *Set[T]) All() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.tasks))
	for _, t := range s.tasks {
		out = append(out, t)
	}
	return out
}

// GetOrBuild returns the task of one partition, building it first when
// the set does not hold it: once however many callers ask at once, and
// under the partition's generation. A build that a drop (revoke, abort,
// new session) raced with is discarded, its store closed, and the caller
// gets ErrMoved. built runs only for a build that was kept.
func (s *Set[T]) GetOrBuild(topic string, part int32, build func() (T, error), built func(T)) (T, error) {
	if t, ok := s.Get(topic, part); ok {
		return t, nil
	}
	l, gen := s.buildLock(topic, part)
	l.Lock()
	defer l.Unlock()
	if t, ok := s.Get(topic, part); ok {
		return t, nil
	}
	var none T
	t, err := build()
	if err != nil {
		return none, err
	}
	if !s.putIf(gen, topic, part, t) {
		_ = t.Store().Close()
		return none, ErrMoved
	}
	built(t)
	return t, nil
}

// ChangelogRecords turns every task's state changes since the last
// commit into changelog records (tombstones for deleted keys), one
// partition per task, counts them in tally and clears the change sets.
func (s *Set[T]) ChangelogRecords(tally *metrics.Tally) []*kgo.Record {
	var out []*kgo.Record
	for _, t := range s.All() {
		l, st := t.Locker(), t.Store()
		l.Lock()
		for _, c := range st.Changes() {
			out = append(out, &kgo.Record{Topic: t.ChangelogTopic(), Partition: t.Partition(), Key: c.Key, Value: c.Value})
			tally.Changelog[t.RouteName()]++
		}
		st.ResetChanges()
		l.Unlock()
	}
	return out
}

// Produced notes a changelog record written (acknowledged) in the
// current transaction, when it is one of the stage's.
func (s *Set[T]) Produced(r *kgo.Record) {
	if !s.changelogs[r.Topic] {
		return
	}
	s.offMu.Lock()
	k := key{r.Topic, r.Partition}
	s.clNext[k] = max(s.clNext[k], r.Offset+1)
	s.offMu.Unlock()
}

// Checkpoint runs after a commit: every on-disk store makes its state
// durable with the offset after its last changelog record (done is told
// of it), so a restart restores only what follows. A store that fails is
// dropped (failed is told; its next use restores it); the commit itself
// stands.
func (s *Set[T]) Checkpoint(now time.Time, done func(T, int64), failed func(T, error)) {
	s.offMu.Lock()
	next := s.clNext
	s.clNext = map[key]int64{}
	s.offMu.Unlock()
	if len(next) == 0 {
		return
	}
	for _, t := range s.All() {
		ck, ok := t.Store().(changelog.Checkpointer)
		if !ok {
			continue
		}
		off, ok := next[key{t.ChangelogTopic(), t.Partition()}]
		if !ok {
			continue
		}
		l := t.Locker()
		l.Lock()
		err := ck.Commit(off, now)
		l.Unlock()
		if err != nil {
			failed(t, err)
			s.Drop(map[string][]int32{t.RepartitionTopic(): {t.Partition()}})
			continue
		}
		done(t, off)
	}
}
