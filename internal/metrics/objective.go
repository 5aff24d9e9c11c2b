package metrics

import "github.com/prometheus/client_golang/prometheus"

// Objective metric names (slo: on the dirty route and the routes), each
// labelled by route (dirty for the dirty route) and objective
// (dirty_share, late_share, event_time_lag).
const (
	// NameObjectiveValue is the objective's value over its window after
	// the last commit: a share, or a lag in seconds (event_time_lag).
	NameObjectiveValue = "sidestream_objective_value"
	// NameObjectiveMax is the objective's largest allowed value.
	NameObjectiveMax = "sidestream_objective_max"
	// NameObjectiveBreached is 1 while the value is over the max and the
	// window holds min_records.
	NameObjectiveBreached = "sidestream_objective_breached"
	// NameObjectivePaused is 1 while the objective keeps the inputs
	// paused (on_breach: pause).
	NameObjectivePaused = "sidestream_objective_paused"
	// NameObjectivePauses counts the pauses the objective caused.
	NameObjectivePauses = "sidestream_objective_pauses_total"
)

// ObjectiveMetrics are the collectors of the objectives.
type ObjectiveMetrics struct {
	Value    *prometheus.GaugeVec   // route, objective
	Max      *prometheus.GaugeVec   // route, objective
	Breached *prometheus.GaugeVec   // route, objective
	Paused   *prometheus.GaugeVec   // route, objective
	Pauses   *prometheus.CounterVec // route, objective
}

func newObjectiveMetrics(r *prometheus.Registry) *ObjectiveMetrics {
	ro := []string{"route", "objective"}
	o := &ObjectiveMetrics{
		Value: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameObjectiveValue,
			Help: "An objective's value over its window (slo), after the last commit: the share of bad records (dirty_share, late_share), or the largest event-time lag in seconds (event_time_lag)."}, ro),
		Max: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameObjectiveMax,
			Help: "An objective's largest allowed value (slo max_dirty_share, max_late_share: a share; max_event_time_lag: seconds)."}, ro),
		Breached: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameObjectiveBreached,
			Help: "1 while an objective's value is over its max with at least min_records in its window, else 0."}, ro),
		Paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameObjectivePaused,
			Help: "1 while an objective with on_breach: pause keeps the inputs paused, else 0."}, ro),
		Pauses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameObjectivePauses,
			Help: "Pauses of the inputs an objective caused (on_breach: pause)."}, ro),
	}
	r.MustRegister(o.Value, o.Max, o.Breached, o.Paused, o.Pauses)
	return o
}

// ObjectiveState is one objective's state as the runtime publishes it.
type ObjectiveState struct {
	Route, Objective  string
	Value, Max        float64
	Breached, Pausing bool
}

// SetObjective publishes one objective's state: the one place its
// gauges are written.
func (o *ObjectiveMetrics) SetObjective(s ObjectiveState) {
	o.Value.WithLabelValues(s.Route, s.Objective).Set(s.Value)
	o.Max.WithLabelValues(s.Route, s.Objective).Set(s.Max)
	o.Breached.WithLabelValues(s.Route, s.Objective).Set(b2f(s.Breached))
	o.Paused.WithLabelValues(s.Route, s.Objective).Set(b2f(s.Pausing))
	o.Pauses.WithLabelValues(s.Route, s.Objective).Add(0)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
