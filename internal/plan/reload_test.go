package plan

import (
	"strings"
	"testing"
)

// TestReloadRefusals: a reload applies a change of stage one (a
// stateless route, a window route's when, routing, an input's schema)
// and refuses everything else with a note saying why.
func TestReloadRefusals(t *testing.T) {
	base := lateOrders(t)
	cases := []struct {
		name, old, new string
		refused        []string // the refused paths, in order; none: applies
		note           string   // in the first refusal's note
	}{
		{"stateless route's predicate", "  - name: orders\n    topic: orders.clean\n", "  - name: orders\n    topic: orders.clean\n    when: amount > 10\n", nil, ""},
		{"new stateless route", "dirty:\n", "  - {name: big, topic: orders.big, when: amount > 100}\ndirty:\n", nil, ""},
		{"new stateless route with an objective", "dirty:\n", "  - {name: big, topic: orders.big, slo: {max_event_time_lag: 1m, span: 1m}}\ndirty:\n", []string{"routes[big]"}, "objectives"},
		{"window route's when", "  - name: revenue\n    topic: orders.revenue-per-minute\n", "  - name: revenue\n    when: amount > 0\n    topic: orders.revenue-per-minute\n", nil, ""},
		{"routing", "match: all ", "match: first", nil, ""},
		{"stateless route's objective (the guard is built at start)", "  - name: orders\n    topic: orders.clean\n", "  - name: orders\n    topic: orders.clean\n    slo: {max_event_time_lag: 1m, records: 100}\n", []string{"routes[orders].slo"}, "objectives"},
		{"window grace (breaking: it places the stored timers)", "grace: 5m", "grace: 6m", []string{"routes[revenue].window.grace"}, "breaking"},
		{"window topic (stage two)", "topic: orders.revenue-per-minute", "topic: orders.revenue", []string{"routes[revenue].topic"}, "stage two"},
		{"aggregate (breaking)", "        - {name: largest, fn: max, of: amount}\n", "", []string{"routes[revenue].window.aggregates"}, "breaking"},
		{"new window (new state)", "dirty:\n", "  - {name: w2, topic: o.w2, window: {type: tumbling, size: 1m, late_topic: o.late, aggregates: [{name: n, fn: count}]}}\ndirty:\n", []string{"routes[w2]"}, "new state"},
		{"removed window", "  - name: revenue\n", "  - name: revenue-old\n", []string{"routes[revenue-old]", "routes[revenue]"}, "new state"},
		{"guarantee", "guarantee: exactly_once", "guarantee: at_least_once", []string{"guarantee"}, "restart"},
		{"new input", "  - topic: orders\n", "  - topic: orders\n  - topic: orders2\n", []string{"inputs"}, "subscription"},
		{"dirty topic", "topic: orders.dirty", "topic: orders.bad", []string{"dirty"}, "stage two"},
		{"application_id", "application_id: late-orders", "application_id: late-orders-2", []string{"application_id", "routes[revenue].window", "routes[revenue].window"}, "breaking"},
		{"brokers (not in Diff)", "guarantee: exactly_once", "guarantee: exactly_once\nbrokers: [other:9092]", []string{"brokers"}, "restart"},
		{"shutdown timeout", "guarantee: exactly_once", "guarantee: exactly_once\nshutdown_timeout: 1m", []string{"shutdown_timeout"}, "restart"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := compileText(t, "old.yaml", base)
			src := edit(t, base, tc.old, tc.new)
			n := compileText(t, "new.yaml", src)
			changes := Diff(old, n)
			if len(changes) == 0 && tc.name != "brokers (not in Diff)" && tc.name != "shutdown timeout" {
				t.Fatal("no change: the case tests nothing")
			}
			got := ReloadRefusals(old, n, changes)
			var paths []string
			for _, c := range got {
				paths = append(paths, c.Path)
			}
			if tc.name == "application_id" {
				// Every stateful route's topics change with the id; only
				// the first refusal matters here.
				paths = paths[:1]
				tc.refused = tc.refused[:1]
			}
			if strings.Join(paths, ",") != strings.Join(tc.refused, ",") {
				t.Fatalf("refused %q, want %q (changes %+v)", paths, tc.refused, changes)
			}
			if len(got) > 0 && !strings.Contains(got[0].Note, tc.note) {
				t.Fatalf("note %q does not say %q", got[0].Note, tc.note)
			}
			if strings.HasPrefix(tc.name, "brokers") && (got[0].Was != nil || got[0].Now != nil) {
				t.Fatalf("a settings refusal carries values: %+v", got[0])
			}
		})
	}
}

// TestReloadSchemaOnly: an input's JSON Schema file may change in a
// reload; its topic may not.
func TestReloadSchemaOnly(t *testing.T) {
	base := lateOrders(t)
	old := compileText(t, "old.yaml", base)
	n := compileText(t, "../../examples/new.yaml", edit(t, base, "  - topic: orders\n", "  - topic: orders\n    schema: schemas/log-event.json\n"))
	changes := Diff(old, n)
	if len(changes) != 1 || changes[0].Path != "inputs" {
		t.Fatalf("changes %+v, want inputs", changes)
	}
	if r := ReloadRefusals(old, n, changes); len(r) != 0 {
		t.Fatalf("a schema change refused: %+v", r)
	}
}
