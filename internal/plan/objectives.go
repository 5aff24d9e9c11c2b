package plan

import (
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/objective"
)

// objectivesOf compiles the slo blocks of the dirty route and the
// routes, dirty first, then the routes in the file's order, each route's
// late share before its event-time lag.
func objectivesOf(cfg *config.Config) []objective.Spec {
	var out []objective.Spec
	if s := cfg.Dirty.SLO; s != nil && s.MaxDirtyShare != nil {
		out = append(out, specOf(objective.DirtyRoute, objective.DirtyShare, *s.MaxDirtyShare, s.Window()))
	}
	for _, r := range cfg.Routes {
		s := r.SLO
		if s == nil {
			continue
		}
		if s.MaxLateShare != nil && r.Window != nil {
			out = append(out, specOf(r.Name, objective.LateShare, *s.MaxLateShare, s.Window()))
		}
		if s.MaxEventTimeLag > 0 {
			out = append(out, specOf(r.Name, objective.EventTimeLag, s.MaxEventTimeLag.D().Seconds(), s.Window()))
		}
	}
	return out
}

func specOf(route string, kind objective.Kind, maxValue float64, w config.SLOWindow) objective.Spec {
	return objective.Spec{Route: route, Kind: kind, Max: maxValue, Records: w.Records, Span: w.Span.D(),
		MinRecords: w.MinRecords, Pause: w.OnBreach == config.BreachPause, ResumeAfter: w.ResumeAfter.D()}
}
