package config

import (
	"strings"
	"testing"
)

// TestWarnings: with match: all, a route that matches every record (no
// when, when: true, a window without when) makes routing.default
// unreachable; with match: first, drop, or every route conditional,
// nothing is said.
func TestWarnings(t *testing.T) {
	const base = "application_id: a\nbrokers: [k:9092]\ninputs:\n  - topic: in\nrouting:\n  match: %MATCH%\n  default: %DEF%\nroutes:\n  - name: every\n    topic: out.every\n%WHEN%  - name: main\n    topic: out\n    when: level == \"x\"\ndirty:\n  topic: in.dirty\n"
	window := strings.Replace(base, "  - name: every\n    topic: out.every\n", "  - name: every\n    topic: out.every\n    window: {type: tumbling, size: 1m, group_by: user, late_topic: out.late, aggregates: [{name: n, fn: count}]}\n", 1)
	window = strings.Replace(window, "routing:", "event_time: {field: ts, format: epoch_ms}\nrouting:", 1)
	cfg, err := Load("t.yaml", []byte(strings.NewReplacer("%MATCH%", "all", "%DEF%", "main", "%WHEN%", "").Replace(window)))
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0].String(), `t.yaml:10:5: routing.default "main" is unreachable`) { // line 10: event_time comes first
		t.Errorf("an always-on window: warnings %v", w)
	}
	for _, c := range []struct {
		name, match, def, when, want string
	}{
		{"no when", "all", "main", "", `t.yaml:9:5: routing.default "main" is unreachable: with routing.match: all, route "every" has no when, so it matches every record`},
		{"when true", "all", "main", "    when: \"true\"\n", `t.yaml:11:11: routing.default "main" is unreachable: with routing.match: all, route "every" has when: true`},
		{"the default itself", "all", "every", "", `t.yaml:9:5: route "every" is routing.default and has no when: with routing.match: all it receives every record`},
		{"conditional", "all", "main", "    when: level == \"y\"\n", ""},
		{"match first", "first", "main", "", ""},
		{"drop", "all", "drop", "", ""},
	} {
		src := strings.NewReplacer("%MATCH%", c.match, "%DEF%", c.def, "%WHEN%", c.when).Replace(base)
		cfg, err := Load("t.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for _, w := range cfg.Warnings() {
			got = append(got, w.String())
		}
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: warnings %q, want none", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want)):
			t.Errorf("%s: warnings %q, want %q", c.name, got, c.want)
		}
	}
}
