package stagetwo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/tasks"
)

// buildTask builds the task of one partition of set (Set.GetOrBuild):
// the runtime restores a fresh store (Runtime.Restore), newOp rebuilds the operator on it;
// the restore's writes are not changes, an accepted changelog loss is
// marked in the store (written with the next commit), and the
// partition's lost state is cleared. restored logs a kept build.
func buildTask[T tasks.Task](ctx context.Context, s *Stage, set *tasks.Set[T], topic, route, changelogTopic string, part int32,
	newOp func(changelog.Store) (T, error), restored func(T, Restored, time.Duration)) (T, error) {
	var res Restored
	var start time.Time
	build := func() (T, error) {
		var none T
		start = time.Now()
		st, r, err := s.rt.Restore(ctx, route, changelogTopic, part)
		if err != nil {
			return none, err
		}
		res = r
		t, err := newOp(st)
		if err != nil {
			_ = st.Close()
			if he := s.held(err, topic, part); he != nil {
				return none, he
			}
			return none, fmt.Errorf("route %q partition %d: %w", route, part, err)
		}
		st.ResetChanges()
		if res.Accept != NoMark {
			if err := writeLossMark(st, res.Accept); err != nil {
				_ = st.Close()
				return none, fmt.Errorf("route %q partition %d: %w", route, part, err)
			}
		}
		s.rt.ClearLost(topic, part)
		return t, nil
	}
	t, err := set.GetOrBuild(topic, part, build, func(t T) {
		d := time.Since(start)
		s.rt.Kept(route, res, d)
		restored(t, res, d)
	})
	if errors.Is(err, tasks.ErrMoved) {
		return t, ErrStateMoved
	}
	return t, err
}

// held is err as a *HeldError of the window or assembly route of topic,
// or nil when err is not a refusal of state written under another spec.
func (s *Stage) held(err error, topic string, part int32) *HeldError {
	if wr := s.ws.routes[topic]; wr != nil {
		return heldError(err, wr.rt.Name, topic, part, wr.rt.Window.Direct, wr.rt.Window.StateSpec)
	}
	if ar := s.as.routes[topic]; ar != nil {
		return heldError(err, ar.rt.Name, topic, part, ar.rt.Assembly.Direct, ar.rt.Assembly.StateSpec)
	}
	return nil
}

// OpenStore opens the store of one changelog partition with its stage's
// builder (the runtime's Restore calls it).
func (s *Stage) OpenStore(changelogTopic string, part int32) (changelog.Store, error) {
	if s.ws.routes[s.RepartitionOf(changelogTopic)] != nil {
		return s.ws.builder(changelogTopic, part)
	}
	return s.asmStores(changelogTopic, part)
}

// Drop forgets the state of every stateful stage: all of it (nil) or
// that of the given partitions. It returns parts with the direct tasks of
// the input partitions in it (withDirect), for the runtime's own state.
func (s *Stage) Drop(parts map[string][]int32) map[string][]int32 {
	parts = s.withDirect(parts)
	s.ws.Drop(parts)
	s.as.Drop(parts)
	return parts
}

// Produced notes a changelog record written in the current transaction.
func (s *Stage) Produced(r *kgo.Record) {
	s.ws.Produced(r)
	s.as.Produced(r)
}

// Checkpoint runs after a commit: every stage's on-disk stores make their
// state durable (tasks.Set.Checkpoint).
func (s *Stage) Checkpoint() {
	now := time.Now() // after the commit: every later changelog record is newer
	done := func(t tasks.Task, off int64) { s.rt.LocalCheckpoint(t.RepartitionTopic(), t.Partition(), &off) }
	failed := func(t tasks.Task, err error) {
		s.log.Error("local state checkpoint failed; the task restores from the changelog next time",
			"route", t.RouteName(), "partition", t.Partition(), "err", err)
	}
	s.ws.Checkpoint(now, func(t *windowTask, off int64) { done(t, off) }, func(t *windowTask, err error) { failed(t, err) })
	s.as.Checkpoint(now, func(t *assemblyTask, off int64) { done(t, off) }, func(t *assemblyTask, err error) { failed(t, err) })
}

// ChangelogRecords are the changelog records of every stateful stage. A
// direct task that writes any holds state from then on (sourceTracker).
func (s *Stage) ChangelogRecords(tally *metrics.Tally) []*kgo.Record {
	out := append(s.ws.ChangelogRecords(tally), s.as.ChangelogRecords(tally)...)
	if len(s.ws.direct)+len(s.as.direct) > 0 {
		type tp struct {
			topic string
			part  int32
		}
		seen := map[tp]bool{}
		for _, r := range out {
			k := tp{r.Topic, r.Partition}
			if seen[k] {
				continue
			}
			seen[k] = true
			if rep := s.RepartitionOf(r.Topic); s.IsDirect(rep) {
				s.rt.Hold(rep, r.Partition, s.RouteOf(rep))
			}
		}
	}
	return out
}

// withDirect adds to parts, for every window or assembly route without a
// repartition topic, the tasks of the input partitions in parts (they are
// known by the route's repartition topic name). Nil stays nil: all.
func (s *Stage) withDirect(parts map[string][]int32) map[string][]int32 {
	direct := s.DirectTopics()
	if parts == nil || len(direct) == 0 {
		return parts
	}
	out := make(map[string][]int32, len(parts)+len(direct))
	for t, ps := range parts {
		out[t] = append(out[t], ps...)
	}
	for _, in := range s.top.InputTopics() {
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

// DirectTopics are the (virtual) repartition topic names of the window and
// assembly routes without a repartition topic (repartition: false).
func (s *Stage) DirectTopics() []string {
	var out []string
	for rep := range s.ws.direct {
		out = append(out, rep)
	}
	for rep := range s.as.direct {
		out = append(out, rep)
	}
	return out
}

// RouteOf names the window or assembly route of a (virtual) repartition
// topic.
func (s *Stage) RouteOf(rep string) string {
	if r := s.ws.routes[rep]; r != nil {
		return r.rt.Name
	}
	if r := s.as.routes[rep]; r != nil {
		return r.rt.Name
	}
	if r := s.ws.direct[rep]; r != nil {
		return r.rt.Name
	}
	if r := s.as.direct[rep]; r != nil {
		return r.rt.Name
	}
	return ""
}

// IsDirect reports whether topic names a route without a repartition
// topic, whose tasks run in the input partitions of the same number.
func (s *Stage) IsDirect(topic string) bool {
	return s.ws.direct[topic] != nil || s.as.direct[topic] != nil
}

// Task is the task of one partition of a window or assembly route's
// (virtual) repartition topic, restored from its changelog first when
// this process does not hold it yet; concurrent callers share one build.
func (s *Stage) Task(ctx context.Context, topic string, part int32) (tasks.Task, error) {
	if s.ws.routes[topic] != nil {
		return s.windowTask(ctx, topic, part)
	}
	if s.as.routes[topic] != nil {
		return s.assemblyTask(ctx, topic, part)
	}
	return nil, fmt.Errorf("%s is no window or assembly route's topic", topic)
}

// HasTask reports whether this process holds the task of topic/part.
func (s *Stage) HasTask(topic string, part int32) bool {
	if _, ok := s.ws.Get(topic, part); ok {
		return true
	}
	_, ok := s.as.Get(topic, part)
	return ok
}
