package plan

import (
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/objective"
)

// objectivesOf compiles the slo blocks of the dirty route and the window
// routes, dirty first, then the routes in the file's order.
func objectivesOf(cfg *config.Config) []objective.Spec {
	var out []objective.Spec
	if s := cfg.Dirty.SLO; s != nil && s.MaxDirtyShare != nil {
		out = append(out, specOf(objective.DirtyRoute, objective.DirtyShare, *s.MaxDirtyShare, s.Window()))
	}
	for _, r := range cfg.Routes {
		if s := r.SLO; s != nil && s.MaxLateShare != nil && r.Window != nil {
			out = append(out, specOf(r.Name, objective.LateShare, *s.MaxLateShare, s.Window()))
		}
	}
	return out
}

func specOf(route string, kind objective.Kind, maxShare float64, w config.SLOWindow) objective.Spec {
	return objective.Spec{Route: route, Kind: kind, Max: maxShare, Records: w.Records, Span: w.Span.D(),
		MinRecords: w.MinRecords, Pause: w.OnBreach == config.BreachPause, ResumeAfter: w.ResumeAfter.D()}
}
