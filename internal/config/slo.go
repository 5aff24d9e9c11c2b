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

// RouteSLO is a route's objectives (routes[].slo), over one window: the
// largest share of a window route's records that may come too late for
// every window (late records among late and aggregated ones), and the
// largest event-time lag of any route's newest record at a commit.
type RouteSLO struct {
	MaxLateShare    *float64 `yaml:"max_late_share"`
	MaxEventTimeLag Duration `yaml:"max_event_time_lag"`
	Records         int      `yaml:"records"`
	Span            Duration `yaml:"span"`
	MinRecords      int      `yaml:"min_records"`
	OnBreach        string   `yaml:"on_breach"`
	ResumeAfter     Span     `yaml:"resume_after"`
}

// Window is the objective's window and breach policy.
func (s RouteSLO) Window() SLOWindow {
	return SLOWindow{s.Records, s.Span, s.MinRecords, s.OnBreach, s.ResumeAfter}
}

// sloSettings are the slo block of a route or the dirty route: objs are
// its objectives' max settings, their paths relative to the block.
func sloSettings(prefix string, objs ...Setting) []Setting {
	p := prefix + ".slo"
	out := []Setting{
		{Path: p, Type: tSection, Doc: "objectives: the largest share of bad records or event-time lag over a window, and what a breach does", Notes: "objectives, judged after every commit over a sliding window of committed intervals; see [Objectives](../objectives.md#objectives-per-route-slos-and-the-pause-guard)"},
	}
	for _, o := range objs {
		o.Path = p + "." + o.Path
		out = append(out, o)
	}
	return append(out, []Setting{
		{Path: p + ".records", Type: tInt, Doc: "the window: the newest commits holding at least this many records; or `span`"},
		{Path: p + ".span", Type: tDuration, Doc: "the window: the commits of this last span; or `records`"},
		{Path: p + ".min_records", Type: tInt, Default: itoa(DefaultSLOMinRecords), Min: "1", Doc: "the fewest records the window holds before the objective can breach"},
		{Path: p + ".on_breach", Type: tString, Default: BreachAlert, Enum: []string{BreachAlert, BreachPause}, Doc: "`alert`: metrics and the chart's alert only; `pause`: also stop consuming every input until resumed"},
		{Path: p + ".resume_after", Type: tSpan, Default: "0s", Doc: "`pause`: resume by itself after this long; 0s waits for `POST /resume`"},
	}...)
}

// validateRouteSLO checks routes[i].slo (p is routes[i]): at least one
// objective, the late share on window routes only (a lag is positive:
// Duration's decoding says so).
func (d *doc) validateRouteSLO(p string, r Route) {
	s, sp := r.SLO, p+".slo"
	switch {
	case s.MaxLateShare == nil && s.MaxEventTimeLag == 0 && d.nodes[sp+".max_event_time_lag"] == nil:
		d.at(sp, "%s: set max_late_share (window routes) or max_event_time_lag, the objective's max", sp)
	case s.MaxLateShare != nil && r.Window == nil:
		d.at(sp+".max_late_share", "%s.max_late_share applies to window routes; the dirty share of the inputs is dirty.slo's", sp)
	}
	if s.MaxLateShare != nil {
		d.validateShare(sp, "max_late_share", s.MaxLateShare)
	}
	d.validateSLOWindow(sp, s.Window())
}

// validateShare checks a share setting of the slo block at sp.
func (d *doc) validateShare(sp, share string, v *float64) {
	switch {
	case v == nil:
		d.at(sp, "%s: set %s, the largest share the objective allows", sp, share)
	case *v < 0 || *v > 1:
		d.at(sp+"."+share, "%s.%s must be between 0 and 1, got %v", sp, share, *v)
	}
}

// validateSLOWindow checks the window and breach policy of the slo block
// at sp (routes[i].slo or dirty.slo).
func (d *doc) validateSLOWindow(sp string, w SLOWindow) {
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
