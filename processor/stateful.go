package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/changelog"
	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/processor/tasks"
)

// buildTask builds the task of one partition of set (Set.GetOrBuild):
// restoreTask restores a fresh store, newOp rebuilds the operator on it;
// the restore's writes are not changes, an accepted changelog loss is
// marked in the store (written with the next commit), and the
// partition's lost state is cleared. restored logs a kept build.
func buildTask[T tasks.Task](ctx context.Context, p *Processor, set *tasks.Set[T], topic, route, changelogTopic string, part int32,
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
		p.st.ClearLost(topic, part)
		return t, nil
	}
	t, err := set.GetOrBuild(topic, part, build, func(t T) { restored(t, res, time.Since(start)) })
	if errors.Is(err, tasks.ErrMoved) {
		return t, errStateMoved
	}
	return t, err
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
	if p.ws.routes[p.repartitionOf(changelogTopic)] != nil {
		return p.ws.builder(changelogTopic, part)
	}
	return p.opts.asmStores(changelogTopic, part)
}

// dropState forgets the state of every stateful stage: all of it (nil)
// or that of the given partitions.
func (p *Processor) dropState(parts map[string][]int32) {
	parts = p.withDirect(parts)
	p.ws.Drop(parts)
	p.as.Drop(parts)
	p.src.drop(parts)
}

// produced notes a changelog record written in the current transaction.
func (p *Processor) produced(r *kgo.Record) {
	p.ws.Produced(r)
	p.as.Produced(r)
}

// checkpoint runs after a commit: every stage's on-disk stores make their
// state durable (tasks.Set.Checkpoint).
func (p *Processor) checkpoint() {
	now := time.Now() // after the commit: every later changelog record is newer
	done := func(t tasks.Task, off int64) { p.st.LocalCheckpoint(t.RepartitionTopic(), t.Partition(), &off) }
	failed := func(t tasks.Task, err error) {
		p.log.Error("local state checkpoint failed; the task restores from the changelog next time",
			"route", t.RouteName(), "partition", t.Partition(), "err", err)
	}
	p.ws.Checkpoint(now, func(t *windowTask, off int64) { done(t, off) }, func(t *windowTask, err error) { failed(t, err) })
	p.as.Checkpoint(now, func(t *assemblyTask, off int64) { done(t, off) }, func(t *assemblyTask, err error) { failed(t, err) })
}

// changelogRecords are the changelog records of every stateful stage. A
// direct task that writes any holds state from then on (sourceTracker).
func (p *Processor) changelogRecords(tally *metrics.Tally) []*kgo.Record {
	out := append(p.ws.ChangelogRecords(tally), p.as.ChangelogRecords(tally)...)
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
