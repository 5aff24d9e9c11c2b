package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
)

// sloTopology declares five objectives: the dirty route's (pausing), a
// plain route's event-time lag, and two window routes' late shares (one
// pausing, one alert only), one of them beside an event-time lag.
const sloTopology = `application_id: slo
inputs: [{topic: in}]
routing: {default: all}
routes:
  - name: all
    topic: out
    slo: {max_event_time_lag: 5m, span: 10m}
  - name: counts
    topic: counts
    window: {type: tumbling, size: 1m, late_topic: counts.late, aggregates: [{name: n, fn: count}]}
    slo: {max_late_share: 0.02, max_event_time_lag: 15m, span: 10m}
  - name: sums
    topic: sums
    window: {type: tumbling, size: 1m, late_topic: sums.late, aggregates: [{name: n, fn: count}]}
    slo: {max_late_share: 0.1, records: 1000000, on_breach: pause, resume_after: 5m}
dirty:
  topic: bad
  slo: {max_dirty_share: 0.05, records: 10000, on_breach: pause}
`

type labelledRules struct {
	Spec struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Expr   string            `yaml:"expr"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	} `yaml:"spec"`
}

// Each objective the topology declares, as the router compiles it, yields
// exactly one breach alert on its own series, and one paused alert when
// it pauses; nothing else does.
func TestObjectiveAlertsFromTopology(t *testing.T) {
	requireHelm(t)
	cfg, err := config.Load("slo.yaml", []byte(sloTopology))
	if err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Objectives) != 5 {
		t.Fatalf("compiled %d objectives, want 5", len(top.Objectives))
	}
	var topo map[string]any
	if err := yaml.Unmarshal([]byte(sloTopology), &topo); err != nil {
		t.Fatal(err)
	}
	vals, err := yaml.Marshal(map[string]any{"topology": topo,
		"monitoring": map[string]any{"prometheusRule": map[string]any{"enabled": true}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, vals, 0o600); err != nil {
		t.Fatal(err)
	}
	var rg labelledRules
	one(t, parse(t, template(t, "-f", file)), "PrometheusRule").decode(t, &rg)
	got := map[string][]string{}
	for _, g := range rg.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "SidestreamObjectiveBreached" && r.Alert != "SidestreamInputsPaused" {
				continue
			}
			key := r.Labels["route"] + "/" + r.Labels["objective"]
			got[r.Alert] = append(got[r.Alert], key)
			metric := map[string]string{"SidestreamObjectiveBreached": "sidestream_objective_breached", "SidestreamInputsPaused": "sidestream_objective_paused"}[r.Alert]
			if !strings.Contains(r.Expr, metric+"{") || !strings.Contains(r.Expr, `route="`+r.Labels["route"]+`"`) || !strings.Contains(r.Expr, `objective="`+r.Labels["objective"]+`"`) {
				t.Errorf("%s %s: expr %q", r.Alert, key, r.Expr)
			}
		}
	}
	var breached, paused []string
	for _, o := range top.Objectives {
		key := o.Route + "/" + string(o.Kind)
		breached = append(breached, key)
		if o.Pause {
			paused = append(paused, key)
		}
	}
	for alert, want := range map[string][]string{"SidestreamObjectiveBreached": breached, "SidestreamInputsPaused": paused} {
		if g := got[alert]; !slices.Equal(g, want) {
			t.Errorf("%s for %v, want %v", alert, g, want)
		}
	}
	// Without objectives in the topology, neither alert exists.
	if names := ruleNames(t, render(t, valueSetArgs(t, "monitoring")...).objs); slices.Contains(names, "SidestreamObjectiveBreached") || slices.Contains(names, "SidestreamInputsPaused") {
		t.Errorf("alerts %v without any objective", names)
	}
}
