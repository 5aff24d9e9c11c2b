package plan

import (
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/config"
)

func compileYAML(t *testing.T, y string) *Plan {
	t.Helper()
	cfg, err := config.Load("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const versionBase = `application_id: app
brokers: [b:9092]
inputs: [{topic: orders}]
event_time: {field: ts, format: epoch_ms}
routing: {match: all, default: drop}
routes:
  - name: revenue
    topic: revenue
    window:
      type: tumbling
      size: 1m
      late_topic: late
      aggregates: [{name: total, fn: sum, of: amount}]
dirty: {topic: dirty}
`

// A state_version change names new internal topics, is new state, and
// covers a breaking change of the same route; the state spec says what
// differs, field by field, or that an older version kept no spec.
func TestStateVersionAndSpecDiff(t *testing.T) {
	old := compileYAML(t, versionBase)
	added := strings.Replace(versionBase, "aggregates: [{name: total, fn: sum, of: amount}]", "aggregates: [{name: total, fn: sum, of: amount}, {name: smallest, fn: min, of: amount}]", 1)
	now := compileYAML(t, added)
	cs := Diff(old, now)
	if len(cs) != 1 || cs[0].Class != Breaking {
		t.Fatalf("added aggregate: %+v, want one breaking change", cs)
	}
	rem := strings.Join(Remedies(cs, "new.yaml", "app"), "\n")
	for _, want := range []string{"router reset --route revenue --config new.yaml --dry-run", "state_version"} {
		if !strings.Contains(rem, want) {
			t.Errorf("remedies %q do not name %q", rem, want)
		}
	}
	d := DiffStateSpec(old.Routes[0].Window.StateSpec, now.Routes[0].Window.StateSpec)
	if d != `window.aggregates: added {"fn":"min","name":"smallest","of":"amount"}` {
		t.Errorf("spec difference %q", d)
	}
	if d := DiffStateSpec(nil, now.Routes[0].Window.StateSpec); !strings.Contains(d, "older version") {
		t.Errorf("difference from a hash-only store %q", d)
	}

	versioned := compileYAML(t, strings.Replace(added, "    window:", "    state_version: 2\n    window:", 1))
	w := versioned.Routes[0].Window
	if w.RepartitionTopic != "app-revenue-v2-repartition" || w.ChangelogTopic != "app-revenue-v2-changelog" || versioned.Routes[0].StateVersion != 2 {
		t.Fatalf("versioned topics %s %s", w.RepartitionTopic, w.ChangelogTopic)
	}
	cs = Diff(old, versioned)
	s := Summary(cs)
	if s[Breaking] != 0 || s[NewState] != 2 {
		t.Fatalf("state_version with an added aggregate: %+v, want two new-state changes", cs)
	}
	for _, tc := range []struct {
		topic string
		want  bool
	}{{"app-revenue-repartition", true}, {"app-revenue-v2-changelog", true}, {"app-revenue-vx-changelog", false},
		{"app-revenue-v2-other", false}, {"app-revenues-changelog", false}, {"other-revenue-changelog", false}} {
		if got := IsStateTopicOf("app", "revenue", tc.topic); got != tc.want {
			t.Errorf("IsStateTopicOf(%s) = %v", tc.topic, got)
		}
	}
}
