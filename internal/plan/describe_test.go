package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/config"
)

// TestDescribeGolden renders each config in every format and compares it
// with testdata/describe/<config>.<format>.golden (go test -update rewrites).
func TestDescribeGolden(t *testing.T) {
	for _, path := range []string{
		"../../examples/logs-by-level.yaml",
		"../config/testdata/good/full.yaml", // match all, drop, projection, two inputs
		"../../examples/assemble-orders.yaml",
		"../../examples/order-payment-shipment.yaml",
		"../../examples/late-orders.yaml",
		"../config/testdata/good/windows.yaml", // every window kind, limits
	} {
		top, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		for _, format := range DescribeFormats {
			t.Run(name+"/"+format, func(t *testing.T) {
				got, err := top.Describe(format)
				if err != nil {
					t.Fatal(err)
				}
				again, err := top.Describe(format)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, again) {
					t.Fatal("two describes of one topology differ")
				}
				checkGolden(t, filepath.Join("testdata", "describe", name+"."+format+".golden"), got)
			})
		}
	}
}

func TestDescribeUnknownFormat(t *testing.T) {
	top, err := Open("../../examples/logs-by-level.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"", "JSON", "svg", "yaml"} {
		b, err := top.Describe(format)
		if !errors.Is(err, ErrUnknownFormat) || b != nil {
			t.Errorf("Describe(%q) = %q, %v; want nil, ErrUnknownFormat", format, b, err)
		}
	}
}

// TestDescribeJSONRoundTrip checks the JSON is exactly the exported
// Description, so an HTTP client can decode it into the same types.
func TestDescribeJSONRoundTrip(t *testing.T) {
	top, err := Open("../config/testdata/good/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := top.Describe(FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	var got Description
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if want := top.Description(); !reflect.DeepEqual(&got, want) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", got, *want)
	}
}

// TestDescriptionGraph checks the graph's shape for the cases the goldens
// do not show side by side: which stages feed dirty and how unmatched
// records leave the router.
func TestDescriptionGraph(t *testing.T) {
	tests := []struct {
		name       string
		yaml       string
		wantStages []string
		wantEdges  []GraphEdge // must be present
		wantNodes  []string    // ids that must be present
		noNodes    []string    // ids that must be absent
	}{
		{
			name: "kafka time, no expressions, default route",
			yaml: `application_id: a
inputs: [{topic: in}]
routing: {default: all}
routes: [{name: all, topic: out}]
dirty: {topic: d}
`,
			wantStages: []string{"decode"},
			wantEdges: []GraphEdge{
				{From: "input:in", To: "decode:in"},
				{From: "decode:in", To: "event_time"},
				{From: "router", To: "route:all", Label: "1st"},
				{From: "router", To: "route:all", Label: "no match"},
				{From: "decode:in", To: "dirty", Label: "decode"},
				{From: "dirty", To: "topic:d"},
			},
			wantNodes: []string{"event_time", "router", "dirty", "topic:out", "topic:d"},
			noNodes:   []string{"drop", "schema:in"},
		},
		{
			name: "field time, match all, drop",
			yaml: `application_id: a
inputs: [{topic: in}, {topic: in2}]
event_time: {field: ts}
routing: {match: all, default: drop}
routes: [{name: a, topic: out, when: x > 1}, {name: b, topic: out2, key: id}]
dirty: {topic: d}
`,
			wantStages: []string{"decode", "event_time", "route"},
			wantEdges: []GraphEdge{
				{From: "router", To: "route:a"},
				{From: "router", To: "route:b"},
				{From: "router", To: "drop", Label: "no match"},
				{From: "decode:in2", To: "dirty", Label: "decode"},
				{From: "event_time", To: "dirty", Label: "event_time"},
				{From: "router", To: "dirty", Label: "route"},
			},
			wantNodes: []string{"input:in", "input:in2", "drop"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load("t.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			top, err := Compile(cfg, "")
			if err != nil {
				t.Fatal(err)
			}
			d := top.Description()
			if !reflect.DeepEqual(d.Dirty.Stages, tt.wantStages) {
				t.Errorf("dirty stages = %q, want %q", d.Dirty.Stages, tt.wantStages)
			}
			nodes := map[string]bool{}
			for _, n := range d.Nodes {
				if nodes[n.ID] {
					t.Errorf("node %q listed twice", n.ID)
				}
				nodes[n.ID] = true
			}
			for _, e := range d.Edges {
				if !nodes[e.From] || !nodes[e.To] {
					t.Errorf("edge %v names a missing node", e)
				}
			}
			for _, want := range tt.wantEdges {
				found := false
				for _, e := range d.Edges {
					found = found || e == want
				}
				if !found {
					t.Errorf("missing edge %+v in %+v", want, d.Edges)
				}
			}
			for _, id := range tt.wantNodes {
				if !nodes[id] {
					t.Errorf("missing node %q", id)
				}
			}
			for _, id := range tt.noNodes {
				if nodes[id] {
					t.Errorf("unexpected node %q", id)
				}
			}
		})
	}
}

func TestMermaidIDsUnique(t *testing.T) {
	d := &Description{Default: config.DropDefault, Nodes: []GraphNode{
		{ID: "topic:a.b", Kind: NodeTopic, Label: "a.b"},
		{ID: "topic:a_b", Kind: NodeTopic, Label: "a_b"},
		{ID: "topic:a-b", Kind: NodeTopic, Label: "a-b"},
	}}
	got := string(d.mermaid())
	for _, want := range []string{`topic_a_b[("a.b")]`, `topic_a_b_2[("a_b")]`, `topic_a_b_3[("a-b")]`} {
		if !strings.Contains(got, want) {
			t.Errorf("mermaid lacks %s:\n%s", want, got)
		}
	}
}

func TestLabelQuoting(t *testing.T) {
	tests := []struct{ in, dot, mermaid string }{
		{`level == "ERROR"`, `"level == \"ERROR\""`, `"level == #quot;ERROR#quot;"`},
		{"a\nb", `"a\nb"`, `"a<br/>b"`},
		{`x > 1 && y < 2 # c`, `"x > 1 && y < 2 # c"`, `"x #gt; 1 #amp;#amp; y #lt; 2 #35; c"`},
		{`back\slash`, `"back\\slash"`, `"back\slash"`},
	}
	for _, tt := range tests {
		if got := dotQuote(tt.in); got != tt.dot {
			t.Errorf("dotQuote(%q) = %s, want %s", tt.in, got, tt.dot)
		}
		if got := mermaidQuote(tt.in); got != tt.mermaid {
			t.Errorf("mermaidQuote(%q) = %s, want %s", tt.in, got, tt.mermaid)
		}
	}
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd", 101: "101st", 111: "111th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}
