package objective

import (
	"fmt"
	"sync"
	"time"
)

// Kind names what an objective bounds; it is the objective label of its
// metrics.
type Kind string

const (
	// DirtyShare is the share of the input records consumed that went to
	// the dirty route (dirty.slo.max_dirty_share).
	DirtyShare Kind = "dirty_share"
	// LateShare is the share of a window route's records that came too
	// late for every window (routes[].slo.max_late_share): late records
	// among late and aggregated ones.
	LateShare Kind = "late_share"
)

// DirtyRoute is the route label of the dirty route's objectives.
const DirtyRoute = "dirty"

// Spec is one objective as the plan states it.
type Spec struct {
	// Route is the route it belongs to (DirtyRoute for the dirty route).
	Route string
	Kind  Kind
	// Max is the largest share that keeps the objective, in [0, 1].
	Max float64
	// Records or Span is the window (Window); exactly one is set.
	Records int
	Span    time.Duration
	// MinRecords is the fewest records the window must hold for a breach.
	MinRecords int
	// Pause stops consuming the inputs while the objective is breached
	// (on_breach: pause).
	Pause bool
	// ResumeAfter, when positive, resumes a pause it caused by itself
	// after this long; else only Guard.Resume does.
	ResumeAfter time.Duration
}

// Status is one objective's state after the last commit.
type Status struct {
	Spec
	Value    float64
	Bad      int64
	Total    int64
	Breached bool
}

// Trip is why the inputs are paused: the objective that tripped the
// guard, its value then and when.
type Trip struct {
	Route string
	Kind  Kind
	Value float64
	Max   float64
	At    time.Time
	// ResumeAt is when the pause ends by itself; zero when only a
	// resume ends it.
	ResumeAt time.Time
}

// Reason is the trip as /readyz says it.
func (t Trip) Reason() string {
	s := fmt.Sprintf("inputs paused: route %s objective %s is %.4f, over its max %.4f (since %s); POST /resume to resume",
		t.Route, t.Kind, t.Value, t.Max, t.At.UTC().Format(time.RFC3339))
	if !t.ResumeAt.IsZero() {
		s += fmt.Sprintf(", or it resumes by itself at %s", t.ResumeAt.UTC().Format(time.RFC3339))
	}
	return s
}

// Guard holds every objective's window and the pause: the runtime feeds
// it each committed interval's counts (Observe) and asks it, before each
// poll, whether the inputs stay paused (Paused). It is safe for
// concurrent use: the API's resume comes from another goroutine.
type Guard struct {
	mu   sync.Mutex
	objs []*tracked
	trip *Trip
}

type tracked struct {
	spec Spec
	win  *Window
	last Status
}

// NewGuard returns a guard over specs; nil when there are none.
func NewGuard(specs []Spec) *Guard {
	if len(specs) == 0 {
		return nil
	}
	g := &Guard{}
	for _, s := range specs {
		g.objs = append(g.objs, &tracked{spec: s, win: NewWindow(s.Records, s.Span), last: Status{Spec: s}})
	}
	return g
}

// Counts gives an objective's bad and total records of one commit.
type Counts func(Spec) (bad, total int64)

// Observe adds one committed interval's counts at now and judges every
// objective; the first breached objective with Pause trips the guard
// when it is not tripped already. It returns every objective's status.
func (g *Guard) Observe(now time.Time, counts Counts) []Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Status, 0, len(g.objs))
	for _, o := range g.objs {
		bad, total := counts(o.spec)
		o.win.Add(now, bad, total)
		o.last = o.judge(now)
		if o.last.Breached && o.spec.Pause && g.trip == nil {
			g.trip = &Trip{Route: o.spec.Route, Kind: o.spec.Kind, Value: o.last.Value, Max: o.spec.Max, At: now}
			if o.spec.ResumeAfter > 0 {
				g.trip.ResumeAt = now.Add(o.spec.ResumeAfter)
			}
		}
		out = append(out, o.last)
	}
	return out
}

// judge is the objective's status at now.
func (o *tracked) judge(now time.Time) Status {
	bad, total := o.win.Counts(now)
	st := Status{Spec: o.spec, Bad: bad, Total: total}
	if total > 0 {
		st.Value = float64(bad) / float64(total)
	}
	st.Breached = total > 0 && total >= int64(o.spec.MinRecords) && st.Value > o.spec.Max
	return st
}

// Statuses returns every objective's status at now (a span window's
// commits expire without new ones).
func (g *Guard) Statuses(now time.Time) []Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Status, 0, len(g.objs))
	for _, o := range g.objs {
		o.last = o.judge(now)
		out = append(out, o.last)
	}
	return out
}

// Paused returns the trip that keeps the inputs paused at now, or nil;
// a trip whose ResumeAt has come is resumed first.
func (g *Guard) Paused(now time.Time) *Trip {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.trip != nil && !g.trip.ResumeAt.IsZero() && !now.Before(g.trip.ResumeAt) {
		g.resumeLocked()
	}
	if g.trip == nil {
		return nil
	}
	t := *g.trip
	return &t
}

// Resume ends the pause and returns the trip it ended (nil when the
// inputs were not paused). The windows of every pausing objective are
// emptied, so the records that tripped the guard do not trip it again:
// they are judged afresh on what comes after the resume.
func (g *Guard) Resume() *Trip {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.resumeLocked()
}

func (g *Guard) resumeLocked() *Trip {
	t := g.trip
	if t == nil {
		return nil
	}
	g.trip = nil
	for _, o := range g.objs {
		if o.spec.Pause {
			o.win.Reset()
			o.last = Status{Spec: o.spec}
		}
	}
	return t
}
