package config

import (
	"strings"
	"testing"
	"time"
)

// A window route and the dirty route with objectives, as the tests vary
// them: WINDOW and DIRTY are replaced by each case's slo block.
const sloYAML = `application_id: slo
inputs: [{topic: in}]
routing: {default: all}
routes:
  - name: all
    topic: out
    when: "true"
  - name: counts
    topic: counts
    window:
      type: tumbling
      size: 1m
      late_topic: counts.late
      aggregates: [{name: n, fn: count}]
    WINDOW
dirty:
  topic: out.dirty
  DIRTY
`

func TestSLOLoads(t *testing.T) {
	src := strings.NewReplacer("WINDOW", "slo: {max_late_share: 0.2, span: 5m}",
		"DIRTY", "slo: {max_dirty_share: 0.05, records: 1000, on_breach: pause, resume_after: 10m}").Replace(sloYAML)
	c := mustLoad(t, src)
	r := c.Routes[1].SLO
	if r == nil || *r.MaxLateShare != 0.2 || r.Span.D().Minutes() != 5 || r.MinRecords != DefaultSLOMinRecords || r.OnBreach != BreachAlert {
		t.Fatalf("route slo %+v", r)
	}
	d := c.Dirty.SLO
	if d == nil || *d.MaxDirtyShare != 0.05 || d.Records != 1000 || d.OnBreach != BreachPause || d.ResumeAfter.D().Minutes() != 10 {
		t.Fatalf("dirty slo %+v", d)
	}
}

func TestSLORefused(t *testing.T) {
	for _, c := range []struct{ window, dirty, want string }{
		{"slo: {records: 10}", "", "routes[1].slo: set max_late_share"},
		{"slo: {max_late_share: 1.5, records: 10}", "", "max_late_share must be between 0 and 1"},
		{"slo: {max_late_share: x, records: 10}", "", "expected a number"},
		{"slo: {max_late_share: 0.1}", "", "set the window, records or span"},
		{"slo: {max_late_share: 0.1, records: 10, span: 1m}", "", "records and span are two windows"},
		{"", "slo: {max_dirty_share: 0.1, records: 10, resume_after: 1m}", "resume_after applies to on_breach: pause"},
		{"", "slo: {max_dirty_share: 0.1, records: 10, on_breach: stop}", `on_breach must be "alert" or "pause"`},
		{"", "slo: {max_dirty_share: 0.1, records: -1}", "records must be positive"},
	} {
		src := strings.NewReplacer("WINDOW", c.window, "DIRTY", c.dirty).Replace(sloYAML)
		_, err := Load("slo.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: got %v, want %q", c.window, c.dirty, err, c.want)
		}
	}
	// A plain route has no late share.
	src := strings.Replace(strings.NewReplacer("WINDOW", "", "DIRTY", "").Replace(sloYAML), `    when: "true"`, `    when: "true"
    slo: {max_late_share: 0.1, records: 10}`, 1)
	if _, err := Load("slo.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "applies to window routes") {
		t.Errorf("plain route slo: %v", err)
	}
}

// max_event_time_lag is any route's: a plain route may have it alone, a
// window route beside max_late_share; a route's slo needs one of them.
func TestSLOEventTimeLag(t *testing.T) {
	src := strings.Replace(strings.NewReplacer("WINDOW", "slo: {max_late_share: 0.2, max_event_time_lag: 10m, span: 5m}", "DIRTY", "").Replace(sloYAML),
		`    when: "true"`, `    when: "true"
    slo: {max_event_time_lag: 30s, records: 500}`, 1)
	c := mustLoad(t, src)
	if r := c.Routes[0].SLO; r == nil || r.MaxEventTimeLag.D() != 30*time.Second || r.MaxLateShare != nil || r.Records != 500 {
		t.Fatalf("plain route slo %+v", r)
	}
	if r := c.Routes[1].SLO; r == nil || r.MaxEventTimeLag.D() != 10*time.Minute || *r.MaxLateShare != 0.2 {
		t.Fatalf("window route slo %+v", r)
	}
	for _, bad := range []struct{ window, want string }{
		{"slo: {max_event_time_lag: -1s, records: 10}", "routes[1].slo.max_event_time_lag: duration must be positive"},
		{"slo: {max_event_time_lag: 0s, records: 10}", "duration must be positive"},
		{"slo: {max_event_time_lag: soon, records: 10}", "routes[1].slo.max_event_time_lag"},
		{"slo: {max_event_time_lag: 1m}", "set the window, records or span"},
		{"slo: {span: 1m}", "set max_late_share (window routes) or max_event_time_lag"},
	} {
		src := strings.NewReplacer("WINDOW", bad.window, "DIRTY", "").Replace(sloYAML)
		if _, err := Load("slo.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want %q", bad.window, err, bad.want)
		}
	}
	src = strings.NewReplacer("WINDOW", "", "DIRTY", "slo: {max_dirty_share: 0.1, max_event_time_lag: 1m, records: 10}").Replace(sloYAML)
	if _, err := Load("slo.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "slo.yaml:18:31: dirty.slo.max_event_time_lag: the dirty route has no event-time lag objective") {
		t.Errorf("dirty slo with a lag: %v", err)
	}
}
