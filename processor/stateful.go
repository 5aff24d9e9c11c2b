package processor

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/changelog"
	"github.com/sidestream/sidestream/metrics"
)

// task is a task of a stateful stage (windows, assemblies): the operator
// of one partition of a repartition topic, whose store is a cache of the
// same partition of a changelog topic. Its lock is held while it
// processes, hands out its changes, checkpoints, is closed or answers a
// state query (the HTTP API reads concurrently).
type task interface {
	store() changelog.Store
	locker() *sync.Mutex
	changelogTopic() string
	repartitionTopic() string
	partition() int32
	routeName() string
}

// generation identifies the drops a partition has seen.
type generation struct{ epoch, gen uint64 }

// taskSet holds the tasks of one stateful stage in this process: the one
// lifecycle of windows and assemblies. A task is built (its state
// restored from the changelog) once, on the first records of its
// partition or a state query, and only kept if no drop raced with the
// build; it is dropped, its store closed, on revoke and on any abort:
// memory is only ever a cache of what the committed changelog holds.
type taskSet[T task] struct {
	mu    sync.Mutex
	tasks map[tp]T
	// building serialises the build of one partition's task: a state
	// query, the processing of that partition and (direct routes) that
	// partition of every input never build two.
	building map[tp]*sync.Mutex
	// A task built while its partition was dropped is stale: epoch counts
	// drops of everything, gens the drops of each partition.
	epoch uint64
	gens  map[tp]uint64
	// changelogs are the stage's changelog topics. clNext is, per
	// changelog partition, the offset after the last changelog record
	// produced in the current transaction: the local checkpoint once the
	// transaction commits.
	changelogs map[string]bool
	offMu      sync.Mutex
	clNext     map[tp]int64
}

func newTaskSet[T task](changelogs map[string]bool) taskSet[T] {
	return taskSet[T]{tasks: map[tp]T{}, building: map[tp]*sync.Mutex{}, gens: map[tp]uint64{},
		changelogs: changelogs, clNext: map[tp]int64{}}
}

// drop forgets tasks, all of them (nil) or those of the given partitions,
// and closes their stores: an on-disk store discards what no commit made
// durable. A build in progress for a dropped partition is discarded.
func (s *taskSet[T]) drop(parts map[string][]int32) {
	s.mu.Lock()
	if parts == nil {
		s.epoch++
	}
	for t, ps := range parts {
		for _, p := range ps {
			s.gens[tp{t, p}]++
		}
	}
	var gone []T
	for k, t := range s.tasks {
		if parts == nil || slices.Contains(parts[k.topic], k.partition) {
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
		l := t.locker()
		l.Lock()
		_ = t.store().Close()
		l.Unlock()
	}
}

func (s *taskSet[T]) get(topic string, part int32) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[tp{topic, part}]
	return t, ok
}

// putIf stores t unless the partition was dropped since generation g.
func (s *taskSet[T]) putIf(g generation, topic string, part int32, t T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tp{topic, part}
	if (generation{s.epoch, s.gens[k]}) != g {
		return false
	}
	s.tasks[k] = t
	return true
}

// buildLock returns the lock that serialises building the task of one
// partition, and the partition's current generation.
func (s *taskSet[T]) buildLock(topic string, part int32) (*sync.Mutex, generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tp{topic, part}
	l := s.building[k]
	if l == nil {
		l = &sync.Mutex{}
		s.building[k] = l
	}
	return l, generation{s.epoch, s.gens[k]}
}

func (s *taskSet[T]) all() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.tasks))
	for _, t := range s.tasks {
		out = append(out, t)
	}
	return out
}

// task returns the task of one partition, building it first when the set
// does not hold it: once however many callers ask at once, and under the
// partition's generation. A build that a drop (revoke, abort, new
// session) raced with is discarded, its store closed: the caller gets
// errStateMoved (the processing goroutines call it between polls, when no
// drop happens; a state query may call it at any time). built runs only
// for a build that was kept.
func (s *taskSet[T]) task(topic string, part int32, build func() (T, error), built func(T)) (T, error) {
	if t, ok := s.get(topic, part); ok {
		return t, nil
	}
	l, gen := s.buildLock(topic, part)
	l.Lock()
	defer l.Unlock()
	if t, ok := s.get(topic, part); ok {
		return t, nil
	}
	var none T
	t, err := build()
	if err != nil {
		return none, err
	}
	if !s.putIf(gen, topic, part, t) {
		_ = t.store().Close()
		return none, errStateMoved
	}
	built(t)
	return t, nil
}

// changelogRecords turns every task's state changes since the last commit
// into changelog records (tombstones for deleted keys), one partition per
// task, and clears the change sets.
func (s *taskSet[T]) changelogRecords(tally *metrics.Tally) []*kgo.Record {
	var out []*kgo.Record
	for _, t := range s.all() {
		l, st := t.locker(), t.store()
		l.Lock()
		for _, c := range st.Changes() {
			out = append(out, &kgo.Record{Topic: t.changelogTopic(), Partition: t.partition(), Key: c.Key, Value: c.Value})
			tally.Changelog[t.routeName()]++
		}
		st.ResetChanges()
		l.Unlock()
	}
	return out
}

// produced notes a changelog record written in the current transaction,
// when it is one of the stage's.
func (s *taskSet[T]) produced(r *kgo.Record) {
	if !s.changelogs[r.Topic] {
		return
	}
	s.offMu.Lock()
	k := tp{r.Topic, r.Partition}
	s.clNext[k] = max(s.clNext[k], r.Offset+1)
	s.offMu.Unlock()
}

// checkpoint runs after a commit: every on-disk store makes its state
// durable with the offset after its last changelog record (done is told
// of it), so a restart restores only what follows. A store that fails is
// dropped (failed is told; its next use restores it); the commit itself
// stands.
func (s *taskSet[T]) checkpoint(now time.Time, done func(T, int64), failed func(T, error)) {
	s.offMu.Lock()
	next := s.clNext
	s.clNext = map[tp]int64{}
	s.offMu.Unlock()
	if len(next) == 0 {
		return
	}
	for _, t := range s.all() {
		ck, ok := t.store().(changelog.Checkpointer)
		if !ok {
			continue
		}
		off, ok := next[tp{t.changelogTopic(), t.partition()}]
		if !ok {
			continue
		}
		l := t.locker()
		l.Lock()
		err := ck.Commit(off, now)
		l.Unlock()
		if err != nil {
			failed(t, err)
			s.drop(map[string][]int32{t.repartitionTopic(): {t.partition()}})
			continue
		}
		done(t, off)
	}
}

// buildTask builds the task of one partition of set (taskSet.task):
// restoreTask restores a fresh store, newOp rebuilds the operator on it;
// the restore's writes are not changes, an accepted changelog loss is
// marked in the store (written with the next commit), and the
// partition's lost state is cleared. restored logs a kept build.
func buildTask[T task](ctx context.Context, p *Processor, set *taskSet[T], topic, route, changelogTopic string, part int32,
	newOp func(changelog.Store) (T, error), restored func(T, restoreResult, time.Duration)) (T, error) {
	var res restoreResult
	var start time.Time
	build := func() (T, error) {
		var none T
		start = time.Now()
		st, r, err := p.restoreTask(ctx, route, changelogTopic, part)
		if err != nil {
			return none, err
		}
		res = r
		t, err := newOp(st)
		if err != nil {
			_ = st.Close()
			return none, fmt.Errorf("route %q partition %d: %w", route, part, err)
		}
		st.ResetChanges()
		if res.accept != noMark {
			if err := writeLossMark(st, res.accept); err != nil {
				_ = st.Close()
				return none, fmt.Errorf("route %q partition %d: %w", route, part, err)
			}
		}
		p.st.clearLost(topic, part)
		return t, nil
	}
	return set.task(topic, part, build, func(t T) { restored(t, res, time.Since(start)) })
}

// restoreTask restores a fresh store from one changelog partition and
// accounts for it (metrics, log).
func (p *Processor) restoreTask(ctx context.Context, route, changelogTopic string, part int32) (changelog.Store, restoreResult, error) {
	start := time.Now()
	st, err := p.openStore(changelogTopic, part)
	if err != nil {
		return nil, restoreResult{accept: noMark}, fmt.Errorf("route %q partition %d: open state store: %w", route, part, err)
	}
	res, err := p.restoreState(ctx, route, changelogTopic, part, st)
	n := res.n
	if err != nil {
		_ = st.Close()
		return nil, res, err
	}
	p.m.RestoreDuration.Observe(time.Since(start).Seconds())
	p.m.RestoredRecords.WithLabelValues(route).Add(float64(n))
	return st, res, nil
}

// openStore opens the store of one changelog partition with its stage's
// builder.
func (p *Processor) openStore(changelogTopic string, part int32) (changelog.Store, error) {
	if p.ws.changelogs[changelogTopic] {
		return p.ws.builder(changelogTopic, part)
	}
	return p.opts.asmStores(changelogTopic, part)
}

// dropState forgets the state of every stateful stage: all of it (nil)
// or that of the given partitions.
func (p *Processor) dropState(parts map[string][]int32) {
	parts = p.withDirect(parts)
	p.ws.drop(parts)
	p.as.drop(parts)
	p.src.drop(parts)
}

// produced notes a changelog record written in the current transaction.
func (p *Processor) produced(r *kgo.Record) {
	p.ws.produced(r)
	p.as.produced(r)
}

// checkpoint runs after a commit: every stage's on-disk stores make their
// state durable (taskSet.checkpoint).
func (p *Processor) checkpoint() {
	now := time.Now() // after the commit: every later changelog record is newer
	done := func(t task, off int64) { p.st.localCheckpoint(t.repartitionTopic(), t.partition(), &off) }
	failed := func(t task, err error) {
		p.log.Error("local state checkpoint failed; the task restores from the changelog next time",
			"route", t.routeName(), "partition", t.partition(), "err", err)
	}
	p.ws.checkpoint(now, func(t *windowTask, off int64) { done(t, off) }, func(t *windowTask, err error) { failed(t, err) })
	p.as.checkpoint(now, func(t *assemblyTask, off int64) { done(t, off) }, func(t *assemblyTask, err error) { failed(t, err) })
}

// changelogRecords are the changelog records of every stateful stage. A
// direct task that writes any holds state from then on (sourceTracker).
func (p *Processor) changelogRecords(tally *metrics.Tally) []*kgo.Record {
	out := append(p.ws.changelogRecords(tally), p.as.changelogRecords(tally)...)
	if len(p.ws.direct)+len(p.as.direct) > 0 {
		seen := map[tp]bool{}
		for _, r := range out {
			k := tp{r.Topic, r.Partition}
			if seen[k] {
				continue
			}
			seen[k] = true
			if rep := p.repartitionOf(r.Topic); p.isDirect(rep) {
				p.src.hold(rep, r.Partition, p.routeOf(rep))
			}
		}
	}
	return out
}

// withDirect adds to parts, for every window or assembly route without a
// repartition topic, the tasks of the input partitions in parts (they are
// known by the route's repartition topic name). Nil stays nil: all.
func (p *Processor) withDirect(parts map[string][]int32) map[string][]int32 {
	direct := p.directTopics()
	if parts == nil || len(direct) == 0 {
		return parts
	}
	out := make(map[string][]int32, len(parts)+len(direct))
	for t, ps := range parts {
		out[t] = append(out[t], ps...)
	}
	for _, in := range p.top.InputTopics() {
		for _, rep := range direct {
			for _, part := range parts[in] {
				if !slices.Contains(out[rep], part) {
					out[rep] = append(out[rep], part)
				}
			}
		}
	}
	return out
}

// directTopics are the (virtual) repartition topic names of the window and
// assembly routes without a repartition topic (repartition: false).
func (p *Processor) directTopics() []string {
	var out []string
	for rep := range p.ws.direct {
		out = append(out, rep)
	}
	for rep := range p.as.direct {
		out = append(out, rep)
	}
	return out
}

// routeOf names the window or assembly route of a (virtual) repartition
// topic.
func (p *Processor) routeOf(rep string) string {
	if r := p.ws.routes[rep]; r != nil {
		return r.rt.Name
	}
	if r := p.as.routes[rep]; r != nil {
		return r.rt.Name
	}
	if r := p.ws.direct[rep]; r != nil {
		return r.rt.Name
	}
	if r := p.as.direct[rep]; r != nil {
		return r.rt.Name
	}
	return ""
}

// isDirect reports whether topic names a route without a repartition
// topic, whose tasks run in the input partitions of the same number.
func (p *Processor) isDirect(topic string) bool {
	return p.ws.direct[topic] != nil || p.as.direct[topic] != nil
}
