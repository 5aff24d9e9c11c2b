package observe

import "sync"

// Gauge is what readiness needs of the sidestream_ready metric.
type Gauge interface{ Set(float64) }

// readiness is the one place that publishes whether the router is ready:
// the state /readyz answers (Observer.Ready) and the sidestream_ready
// gauge are set together, and nothing else writes either, so the two
// cannot disagree. Its lock is the observer's (mu), the one that guards
// the /tasks view, so a reader of /readyz, the gauge and /tasks sees one
// state: a partition stopped on /tasks (a changelog loss, an input gap)
// and "ready" are never published together (Observer.ReadyAfterCommit).
type readiness struct {
	mu     *sync.Mutex // Observer.mu
	ok     bool
	reason string
	gauge  Gauge
}

func newReadiness(g Gauge, mu *sync.Mutex) *readiness {
	g.Set(0)
	return &readiness{mu: mu, reason: "starting", gauge: g}
}

// set publishes ready (ok) or not ready and why.
func (r *readiness) set(ok bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setLocked(ok, reason)
}

// setLocked is set for a caller that holds the observer's lock.
func (r *readiness) setLocked(ok bool, reason string) {
	r.ok, r.reason = ok, reason
	v := 0.0
	if ok {
		v = 1
	}
	r.gauge.Set(v)
}
