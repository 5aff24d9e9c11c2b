package config

import "time"

// What a breached objective does (slo.on_breach).
const (
	// BreachAlert only publishes the breach (metrics, the chart's alert).
	BreachAlert = "alert"
	// BreachPause also stops consuming the inputs until a resume.
	BreachPause = "pause"
)

// DefaultSLOMinRecords is the fewest records a window holds before its
// objective can breach.
const DefaultSLOMinRecords = 100

// SLOWindow is the window and the breach policy every objective shares.
// The window is made of committed intervals (Window in internal/objective):
// over records, the newest commits holding at least that many records;
// over a span, the commits of the last span.
type SLOWindow struct {
	// Records and Span are the window: exactly one is set.
	Records int
	Span    Duration
	// MinRecords is the fewest records the window must hold before the
	// objective can breach.
	MinRecords int
	// OnBreach is alert or pause.
	OnBreach string
	// ResumeAfter, when not 0, resumes a pause this objective caused by
	// itself after that long; else only POST /resume does.
	ResumeAfter Span
}

// DirtySLO is the dirty route's objective (dirty.slo): the largest share
// of the input records consumed that may go to the dirty route.
type DirtySLO struct {
	MaxDirtyShare *float64 `yaml:"max_dirty_share"`
	Records       int      `yaml:"records"`
	Span          Duration `yaml:"span"`
	MinRecords    int      `yaml:"min_records"`
	OnBreach      string   `yaml:"on_breach"`
	ResumeAfter   Span     `yaml:"resume_after"`
}

// Window is the objective's window and breach policy.
func (s DirtySLO) Window() SLOWindow {
	return SLOWindow{s.Records, s.Span, s.MinRecords, s.OnBreach, s.ResumeAfter}
}

// RouteSLO is a window route's objective (routes[].slo): the largest
// share of the route's records that may come too late for every window
// (late records among late and aggregated ones).
type RouteSLO struct {
	MaxLateShare *float64 `yaml:"max_late_share"`
	Records      int      `yaml:"records"`
	Span         Duration `yaml:"span"`
	MinRecords   int      `yaml:"min_records"`
	OnBreach     string   `yaml:"on_breach"`
	ResumeAfter  Span     `yaml:"resume_after"`
}

// Window is the objective's window and breach policy.
func (s RouteSLO) Window() SLOWindow {
	return SLOWindow{s.Records, s.Span, s.MinRecords, s.OnBreach, s.ResumeAfter}
}

// sloSettings are the slo block of a route or the dirty route.
func sloSettings(prefix, share, shareDoc string) []Setting {
	p := prefix + ".slo"
	return []Setting{
		{Path: p, Type: tSection, Doc: "an objective: the largest share of bad records over a window, and what a breach does", Notes: "an objective, judged after every commit over a sliding window of committed intervals; see [Objectives](../objectives.md#objectives-per-route-slos-and-the-pause-guard)"},
		{Path: p + "." + share, Type: tNumber, Doc: shareDoc},
		{Path: p + ".records", Type: tInt, Doc: "the window: the newest commits holding at least this many records; or `span`"},
		{Path: p + ".span", Type: tDuration, Doc: "the window: the commits of this last span; or `records`"},
		{Path: p + ".min_records", Type: tInt, Default: itoa(DefaultSLOMinRecords), Min: "1", Doc: "the fewest records the window holds before the objective can breach"},
		{Path: p + ".on_breach", Type: tString, Default: BreachAlert, Enum: []string{BreachAlert, BreachPause}, Doc: "`alert`: metrics and the chart's alert only; `pause`: also stop consuming every input until resumed"},
		{Path: p + ".resume_after", Type: tSpan, Default: "0s", Doc: "`pause`: resume by itself after this long; 0s waits for `POST /resume`"},
	}
}

// validateSLO checks the slo block at p (routes[i] or dirty): share is
// its share setting's name and v its value, w its window.
func (d *doc) validateSLO(p, share string, v *float64, w SLOWindow) {
	sp := p + ".slo"
	switch {
	case v == nil:
		d.at(sp, "%s: set %s, the largest share the objective allows", sp, share)
	case *v < 0 || *v > 1:
		d.at(sp+"."+share, "%s.%s must be between 0 and 1, got %v", sp, share, *v)
	}
	switch {
	case w.Records == 0 && w.Span == 0:
		d.at(sp, "%s: set the window, records or span", sp)
	case w.Records != 0 && w.Span != 0:
		d.at(sp+".span", "%s: records and span are two windows; set one", sp)
	case w.Records < 0:
		d.at(sp+".records", "%s.records must be positive, got %d", sp, w.Records)
	case w.Span < 0 || (w.Span > 0 && w.Span.D() < time.Millisecond):
		d.at(sp+".span", "%s.span must be at least 1ms", sp)
	}
	if n, ok := d.nodes[sp+".min_records"]; (ok && n.Tag == "!!int" && isZero(n.Value)) || w.MinRecords < 1 {
		d.at(sp+".min_records", "%s.min_records must be at least 1, got %d", sp, w.MinRecords)
	}
	switch w.OnBreach {
	case BreachAlert:
		if w.ResumeAfter != 0 {
			d.at(sp+".resume_after", "%s.resume_after applies to on_breach: pause", sp)
		}
	case BreachPause:
	default:
		d.at(sp+".on_breach", "%s.on_breach must be %q or %q, got %q", sp, BreachAlert, BreachPause, w.OnBreach)
	}
	if w.ResumeAfter < 0 {
		d.at(sp+".resume_after", "%s.resume_after must not be negative", sp)
	}
}
