package processor

import "sync"

// gauge is what readiness needs of the sidestream_ready metric.
type gauge interface{ Set(float64) }

// readiness is the one place that publishes whether the router is ready:
// the state /readyz answers (Processor.Ready) and the sidestream_ready
// gauge are set together, and nothing else writes either, so the two
// cannot disagree. Its lock is the status's (mu), the one that guards
// the /tasks view, so a reader of /readyz, the gauge and /tasks sees one
// state: a partition stopped on /tasks (a changelog loss, an input gap)
// and "ready" are never published together (status.readyAfterCommit).
type readiness struct {
	mu     *sync.Mutex // status.mu
	ok     bool
	reason string
	gauge  gauge
}

func newReadiness(g gauge, mu *sync.Mutex) *readiness {
	g.Set(0)
	return &readiness{mu: mu, reason: "starting", gauge: g}
}

// set publishes ready (ok) or not ready and why.
func (r *readiness) set(ok bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setLocked(ok, reason)
}

// setLocked is set for a caller that holds the status lock.
func (r *readiness) setLocked(ok bool, reason string) {
	r.ok, r.reason = ok, reason
	v := 0.0
	if ok {
		v = 1
	}
	r.gauge.Set(v)
}
