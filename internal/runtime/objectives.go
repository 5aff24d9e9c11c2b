package runtime

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/objective"
	"github.com/sidestream/sidestream/internal/plan"
)

// guard is the processor's side of the objectives (internal/objective):
// each commit's counts go in (observe), and before each poll the commit
// loop applies the pause to its session's client (sync). The inputs of a
// topology feed every route (any route's when may read any input), so a
// pause stops every input topic, and with them every route; repartition
// topics go on, so windows and assemblies finish what stage one already
// wrote. Paused partitions are never fetched: what was fetched and
// buffered is dropped without moving the client's position, so no
// record is skipped and no offset is committed past one not processed.
type guard struct {
	g      *objective.Guard
	inputs []string
	m      *metrics.ObjectiveMetrics
	// mu guards last, the trip last applied (its pause counted once,
	// whatever the sessions that apply it).
	mu   sync.Mutex
	last *objective.Trip
}

func newGuard(top *plan.Plan, m *metrics.ObjectiveMetrics) *guard {
	g := objective.NewGuard(top.Objectives)
	if g == nil {
		return nil
	}
	gd := &guard{g: g, m: m}
	for _, in := range top.Inputs {
		gd.inputs = append(gd.inputs, in.Topic)
	}
	for _, s := range top.Objectives {
		m.SetObjective(metrics.ObjectiveState{Route: s.Route, Objective: string(s.Kind), Max: s.Max})
	}
	return gd
}

// counts are each objective's sample of one committed tally: the dirty
// records among the input records consumed, a window route's late
// records among its late and aggregated ones, the records with an event
// time a route took in and the newest of those event times.
func (gd *guard) counts(t *metrics.Tally) objective.Counts {
	return func(s objective.Spec) objective.Sample {
		switch s.Kind {
		case objective.DirtyShare:
			var dirty, in int
			for _, n := range t.Dirty {
				dirty += n
			}
			for _, topic := range gd.inputs {
				in += t.Consumed[topic]
			}
			return objective.Sample{Bad: int64(dirty), Total: int64(in)}
		case objective.LateShare:
			late := t.Late[s.Route]
			return objective.Sample{Bad: int64(late), Total: int64(late + t.Aggregated[s.Route])}
		case objective.EventTimeLag:
			rt := t.EventTimes[s.Route]
			return objective.Sample{Total: int64(rt.N), Newest: time.UnixMilli(rt.Newest)}
		}
		return objective.Sample{}
	}
}

// observe judges the objectives on a committed interval's tally.
func (p *Processor) observeObjectives(t *metrics.Tally) {
	if p.guard == nil {
		return
	}
	p.guard.g.Observe(p.opts.clock(), p.guard.counts(t))
}

// syncPause applies the guard to the session's client before a poll:
// pauses the inputs when an objective tripped, resumes them after a
// resume (POST /resume) or resume_after; paused says whether this
// client's inputs are paused now. It publishes the objectives' gauges
// and readiness, the one place either is set.
func (p *Processor) syncPause(cl *kgo.Client, paused bool) bool {
	gd := p.guard
	if gd == nil {
		return false
	}
	now := p.opts.clock()
	trip := gd.g.Paused(now)
	gd.publish(now, trip)
	switch {
	case trip != nil && !paused:
		cl.PauseFetchTopics(gd.inputs...)
		if gd.tripped(trip) {
			p.log.Warn("objective breached: inputs paused", "route", trip.Route, "objective", string(trip.Kind), "value", trip.Value, "max", trip.Max)
		}
		p.obs.SetPaused(trip.Reason())
		return true
	case trip == nil && paused:
		cl.ResumeFetchTopics(gd.inputs...)
		p.log.Info("inputs resumed", "topics", gd.inputs)
		p.obs.SetPaused("")
		return false
	}
	return paused
}

// tripped reports whether trip is new (not the one last applied), and
// counts it once.
func (gd *guard) tripped(trip *objective.Trip) bool {
	gd.mu.Lock()
	defer gd.mu.Unlock()
	if gd.last != nil && gd.last.At.Equal(trip.At) && gd.last.Route == trip.Route && gd.last.Kind == trip.Kind {
		return false
	}
	gd.last = trip
	gd.m.Pauses.WithLabelValues(trip.Route, string(trip.Kind)).Inc()
	return true
}

// publish sets every objective's gauges at now.
func (gd *guard) publish(now time.Time, trip *objective.Trip) {
	for _, st := range gd.g.Statuses(now) {
		gd.m.SetObjective(metrics.ObjectiveState{Route: st.Route, Objective: string(st.Kind), Value: st.Value, Max: st.Max,
			Breached: st.Breached, Pausing: trip != nil && trip.Route == st.Route && trip.Kind == st.Kind})
	}
}

// Resume ends a pause an objective caused (POST /resume): the inputs
// are fetched again from the next poll. It reports whether they were
// paused, and why.
func (p *Processor) Resume() (bool, string) {
	if p.guard == nil {
		return false, "no objective pauses the inputs of this topology"
	}
	trip := p.guard.g.Resume()
	if trip == nil {
		return false, "the inputs are not paused"
	}
	return true, trip.Reason()
}
