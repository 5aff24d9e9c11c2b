package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/config"
)

func compileText(t *testing.T, name, src string) *Plan {
	t.Helper()
	cfg, err := config.Load(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(cfg, "../../examples/")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func lateOrders(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/late-orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func edit(t *testing.T, src, old, new string) string {
	t.Helper()
	if !strings.Contains(src, old) {
		t.Fatalf("the example no longer holds %q", old)
	}
	return strings.Replace(src, old, new, 1)
}

// TestDiffSelfIsEmpty: a plan compared with itself has no changes, for
// every shipped example.
func TestDiffSelfIsEmpty(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".test.yaml") {
			continue
		}
		a, errA := Open(f)
		b, errB := Open(f)
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", f, errA, errB)
		}
		if d := Diff(a, b); len(d) != 0 {
			t.Errorf("%s: %d changes against itself: %+v", f, len(d), d)
		}
		n++
	}
	if n < 4 {
		t.Fatalf("only %d examples", n)
	}
}

// TestDiffNewAggregateIsBreaking: the new user's path of the issue: one
// aggregate added to late-orders' window is a breaking change of that
// route alone, named with the old and new aggregates, with remedies.
func TestDiffNewAggregateIsBreaking(t *testing.T) {
	src := lateOrders(t)
	old := compileText(t, "late-orders.yaml", src)
	new := compileText(t, "late-orders.yaml", edit(t, src, "        - {name: customers, fn: distinct_count, of: customer}\n",
		"        - {name: customers, fn: distinct_count, of: customer}\n        - {name: smallest, fn: min, of: amount}\n"))
	d := Diff(old, new)
	if len(d) != 1 || d[0].Class != Breaking || d[0].Path != "routes[revenue].window.aggregates" || d[0].Route != "revenue" {
		t.Fatalf("changes %+v, want one breaking change of routes[revenue].window.aggregates", d)
	}
	text := Render(d, Remedies(d, "new.yaml", "late-orders"))
	for _, want := range []string{`added {"Name":"smallest","Fn":"min","Of":"amount"}`, "router reset --config new.yaml", "new name", "1 breaking"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan does not say %q:\n%s", want, text)
		}
	}
}

// TestDiffClasses: a predicate is live, a grace change is live, a new
// window route is new state, a removed route is live, a new window size
// and a new application_id are breaking.
func TestDiffClasses(t *testing.T) {
	src := lateOrders(t)
	base := compileText(t, "a.yaml", src)
	for _, tc := range []struct {
		name, old, new, path, class string
	}{
		{"window size", "size: 1m", "size: 2m", "routes[revenue].window.size", Breaking},
		{"application id", "application_id: late-orders", "application_id: late-orders-2", "application_id", Breaking},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Diff(base, compileText(t, "b.yaml", edit(t, src, tc.old, tc.new)))
			if len(d) == 0 || d[0].Path != tc.path || d[0].Class != tc.class {
				t.Fatalf("%+v, want %s %s first", d, tc.class, tc.path)
			}
		})
	}
	minimal := "application_id: app\ninputs: [{topic: in}]\ndirty: {topic: out.dirty}\nrouting: {default: main}\nroutes:\n  - name: main\n    topic: out\n    when: x == 1\n"
	a := compileText(t, "a.yaml", minimal)
	for _, tc := range []struct {
		name, new, path, class string
	}{
		{"predicate", strings.Replace(minimal, "x == 1", "x == 2", 1), "routes[main].when", Live},
		{"output limits", minimal + "limits: {max_record_bytes: 500000}\n", "limits", Live},
		{"new window", minimal + "  - name: counts\n    topic: out.counts\n    window: {type: tumbling, size: 1m, late_topic: out.late, aggregates: [{name: n, fn: count}]}\n", "routes[counts]", NewState},
		{"removed route", strings.Replace(minimal, "routing: {default: main}\nroutes:\n  - name: main\n    topic: out\n    when: x == 1\n", "routing: {default: other}\nroutes:\n  - name: other\n    topic: out\n", 1), "routes[main]", Live},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Diff(a, compileText(t, "b.yaml", tc.new))
			found := false
			for _, c := range d {
				if c.Path == tc.path {
					found = true
					if c.Class != tc.class {
						t.Fatalf("%s: class %s, want %s", c.Path, c.Class, tc.class)
					}
				}
				if c.Class == Breaking {
					t.Fatalf("breaking change %+v", c)
				}
			}
			if !found {
				t.Fatalf("%+v lacks %s", d, tc.path)
			}
		})
	}
}
