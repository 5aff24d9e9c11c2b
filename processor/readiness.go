package processor

import "sync"

// gauge is what readiness needs of the sidestream_ready metric.
type gauge interface{ Set(float64) }

// readiness is the one place that publishes whether the router is ready:
// the state /readyz answers (Processor.Ready) and the sidestream_ready
// gauge are set together, under one lock, and nothing else writes
// either, so the two cannot disagree.
type readiness struct {
	mu     sync.Mutex
	ok     bool
	reason string
	gauge  gauge
}

func newReadiness(g gauge) *readiness {
	g.Set(0)
	return &readiness{reason: "starting", gauge: g}
}

// set publishes ready (ok) or not ready and why.
func (r *readiness) set(ok bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ok, r.reason = ok, reason
	v := 0.0
	if ok {
		v = 1
	}
	r.gauge.Set(v)
}

func (r *readiness) get() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok, r.reason
}
