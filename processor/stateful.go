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

// stateful is a task of a stateful stage (windows, assemblies): the
// operator of one partition of a repartition topic, whose store is a
// cache of the same partition of a changelog topic.
type stateful interface {
	store() changelog.Store
	changelogTopic() string
	partition() int32
	routeName() string
}

// taskSet holds the tasks of one stateful stage in this process. Tasks
// are built (their state restored from the changelog) on the first
// records of their partition and dropped on revoke and on any abort:
// memory is only ever a cache of what the committed changelog holds.
type taskSet[T stateful] struct {
	mu    sync.Mutex
	tasks map[tp]T
}

func newTaskSet[T stateful]() taskSet[T] { return taskSet[T]{tasks: map[tp]T{}} }

// drop forgets tasks: all of them (nil) or those of the given partitions.
func (s *taskSet[T]) drop(parts map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if parts == nil {
		s.tasks = map[tp]T{}
		return
	}
	for t, ps := range parts {
		for _, p := range ps {
			delete(s.tasks, tp{t, p})
		}
	}
}

func (s *taskSet[T]) get(topic string, part int32) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[tp{topic, part}]
	return t, ok
}

func (s *taskSet[T]) put(topic string, part int32, t T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks[tp{topic, part}] = t
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

// changelogRecords turns every task's state changes since the last commit
// into changelog records (tombstones for deleted keys), one partition per
// task, and clears the change sets.
func (s *taskSet[T]) changelogRecords(tally *metrics.Tally) []*kgo.Record {
	var out []*kgo.Record
	for _, t := range s.all() {
		st := t.store()
		for _, c := range st.Changes() {
			out = append(out, &kgo.Record{Topic: t.changelogTopic(), Partition: t.partition(), Key: c.Key, Value: c.Value})
			tally.Changelog[t.routeName()]++
		}
		st.ResetChanges()
	}
	return out
}

// restoreTask restores a fresh store from one changelog partition and
// accounts for it (metrics, log).
func (p *Processor) restoreTask(ctx context.Context, route, changelogTopic string, part int32) (changelog.Store, time.Time, int, int64, error) {
	start := time.Now()
	st, err := p.opts.asmStores(changelogTopic, part)
	if err != nil {
		return nil, start, 0, noMark, fmt.Errorf("route %q partition %d: open state store: %w", route, part, err)
	}
	res, err := p.restoreState(ctx, route, changelogTopic, part, st)
	n := res.n
	if err != nil {
		_ = st.Close()
		return nil, start, n, noMark, err
	}
	p.m.RestoreDuration.Observe(time.Since(start).Seconds())
	p.m.RestoredRecords.WithLabelValues(route).Add(float64(n))
	return st, start, n, res.accept, nil
}

// dropState forgets the state of every stateful stage: all of it (nil)
// or that of the given partitions.
func (p *Processor) dropState(parts map[string][]int32) {
	parts = p.withDirect(parts)
	p.ws.drop(parts)
	p.as.drop(parts)
	p.src.drop(parts)
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
