package config

import (
	"strings"
	"testing"
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
