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
	// EventTimeLag is how far a route's newest record lags behind the
	// wall clock (routes[].slo.max_event_time_lag): at each commit, the
	// commit's time minus the event time of the newest record the route
	// took in; its value is the largest such lag over the window, in
	// seconds.
	EventTimeLag Kind = "event_time_lag"
)

// IsLag reports whether the kind's value is a lag in seconds rather
// than a share.
func (k Kind) IsLag() bool { return k == EventTimeLag }

// Format writes a value of the kind: a share to four places, a lag as a
// duration.
func (k Kind) Format(v float64) string {
	if k.IsLag() {
		return time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%.4f", v)
}

// DirtyRoute is the route label of the dirty route's objectives.
const DirtyRoute = "dirty"

// Spec is one objective as the plan states it.
type Spec struct {
	// Route is the route it belongs to (DirtyRoute for the dirty route).
	Route string
	Kind  Kind
	// Max is the largest value that keeps the objective: a share in
	// [0, 1], or a lag in seconds (EventTimeLag).
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
	// Value is the share (Bad / Total), or the largest lag in seconds.
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
	s := fmt.Sprintf("inputs paused: route %s objective %s is %s, over its max %s (since %s); POST /resume to resume",
		t.Route, t.Kind, t.Kind.Format(t.Value), t.Kind.Format(t.Max), t.At.UTC().Format(time.RFC3339))
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

// Sample is one commit's measure of one objective.
type Sample struct {
	// Bad among Total records (a share); for a lag, Total is the records
	// with an event time.
	Bad, Total int64
	// Newest is the newest event time among Total (EventTimeLag only).
	Newest time.Time
}

// Counts gives an objective's sample of one commit.
type Counts func(Spec) Sample

// Observe adds one committed interval's counts at now and judges every
// objective; the first breached objective with Pause trips the guard
// when it is not tripped already. It returns every objective's status.
func (g *Guard) Observe(now time.Time, counts Counts) []Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Status, 0, len(g.objs))
	for _, o := range g.objs {
		o.add(now, counts(o.spec))
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

// add adds one commit's sample at now to the objective's window. A lag
// is never negative: a record whose event time is ahead of the clock
// has none.
func (o *tracked) add(now time.Time, s Sample) {
	if !o.spec.Kind.IsLag() {
		o.win.Add(now, s.Bad, s.Total)
		return
	}
	o.win.AddLag(now, s.Total, max(0, now.Sub(s.Newest)))
}

// judge is the objective's status at now.
func (o *tracked) judge(now time.Time) Status {
	bad, total := o.win.Counts(now)
	st := Status{Spec: o.spec, Bad: bad, Total: total}
	switch {
	case o.spec.Kind.IsLag():
		st.Value = o.win.MaxLag(now).Seconds()
	case total > 0:
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
