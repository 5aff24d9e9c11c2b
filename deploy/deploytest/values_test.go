package deploytest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The chart README's values table is generated from the "# --" comments of
// values.yaml: one truth, and TestChartReadmeValues fails when the README
// says something else. Regenerate it with
//
//	go test ./deploy/deploytest -run TestChartReadmeValues -update
const (
	valuesBegin = "<!-- values:begin: generated from values.yaml by `go test ./deploy/deploytest -run TestChartReadmeValues -update`; edit values.yaml, not this table -->"
	valuesEnd   = "<!-- values:end -->"
)

// valueRow is one row of the table.
type valueRow struct {
	path, def, doc string
}

// valuesDoc reads values.yaml as a node tree.
func valuesDoc(t *testing.T) *yaml.Node {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Content[0]
}

// valueRows walks values.yaml as valuePaths does: a row per value (opaque
// maps and each alert whole), and a row for a walked map that carries a
// "# --" comment of its own.
func valueRows(t *testing.T) []valueRow {
	t.Helper()
	var rows []valueRow
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if prefix != "" {
				p = prefix + "." + p
			}
			doc := docComment(k.HeadComment)
			if v.Kind == yaml.MappingNode && len(v.Content) > 0 && !opaque[p] && prefix != "monitoring.prometheusRule.alerts" {
				if doc != "" {
					rows = append(rows, valueRow{path: p, doc: doc})
				}
				walk(p, v)
				continue
			}
			rows = append(rows, valueRow{path: p, def: defaultOf(t, v), doc: doc})
		}
	}
	walk("", valuesDoc(t))
	return rows
}

// docComment is the text of a key's "# --" comment (from its last "# --"
// line on: a file or section comment above it is not the key's).
func docComment(head string) string {
	lines := strings.Split(head, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# --") {
			start = i
		}
	}
	if start < 0 {
		return ""
	}
	var words []string
	for i, l := range lines[start:] {
		l = strings.TrimPrefix(strings.TrimSpace(l), "#")
		if i == 0 {
			l = strings.TrimPrefix(strings.TrimSpace(l), "--")
		}
		if l = strings.TrimSpace(l); l != "" {
			words = append(words, l)
		}
	}
	return strings.Join(words, " ")
}

// defaultOf renders a value for the table: a scalar as written ("" for an
// empty string), anything else as compact JSON.
func defaultOf(t *testing.T, v *yaml.Node) string {
	t.Helper()
	if v.Kind == yaml.ScalarNode {
		if v.Tag == "!!str" && v.Value == "" {
			return `""`
		}
		return v.Value
	}
	var x any
	if err := v.Decode(&x); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func valuesTable(rows []valueRow) string {
	esc := strings.NewReplacer("|", `\|`)
	var b strings.Builder
	b.WriteString("| value | default | meaning |\n|---|---|---|\n")
	for _, r := range rows {
		def := ""
		if r.def != "" {
			def = "`" + esc.Replace(r.def) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.path, def, esc.Replace(r.doc))
	}
	return b.String()
}

// TestChartReadmeValues keeps the chart README's values table what
// values.yaml's comments say, and every value documented.
func TestChartReadmeValues(t *testing.T) {
	rows := valueRows(t)
	for _, r := range rows {
		if r.doc == "" {
			t.Errorf("value %s has no \"# --\" comment in values.yaml", r.path)
		}
	}
	readme := filepath.Join(root, chartDir, "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(b), valuesBegin+"\n")
	_, after, ok2 := strings.Cut(rest, valuesEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the markers %q and %q around the values table", readme, valuesBegin, valuesEnd)
	}
	want := before + valuesBegin + "\n" + valuesTable(rows) + valuesEnd + after
	if *update {
		if err := os.WriteFile(readme, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(b) != want {
		t.Errorf("the values table of %s differs from values.yaml's comments (go test ./deploy/deploytest -run TestChartReadmeValues -update):\n%s",
			readme, lineDiff(string(b), want))
	}
}

// schemaNode is the part of values.schema.json the checks read.
type schemaNode struct {
	Ref                  string                 `json:"$ref"`
	Type                 any                    `json:"type"`
	Enum                 []any                  `json:"enum"`
	OneOf                []schemaNode           `json:"oneOf"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties any                    `json:"additionalProperties"`
	Definitions          map[string]*schemaNode `json:"definitions"`
}

func loadSchema(t *testing.T) *schemaNode {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s schemaNode
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// openObjects are objects whose keys are data (names, labels) or a whole
// Kubernetes or router object, not the chart's settings.
var openObjects = map[string]bool{"topology": true}

// TestValuesSchemaComplete: every value of values.yaml has a schema that
// constrains it, every settings object is closed (additionalProperties
// false), and every property a closed object's schema names has a default
// in values.yaml.
func TestValuesSchemaComplete(t *testing.T) {
	schema := loadSchema(t)
	resolve := func(n *schemaNode) *schemaNode {
		for n != nil && n.Ref != "" {
			n = schema.Definitions[strings.TrimPrefix(n.Ref, "#/definitions/")]
		}
		return n
	}
	var walk func(path string, v *yaml.Node, s *schemaNode)
	walk = func(path string, v *yaml.Node, s *schemaNode) {
		s = resolve(s)
		if s == nil {
			t.Errorf("%s: not in values.schema.json", path)
			return
		}
		if s.Type == nil && s.Enum == nil && s.OneOf == nil {
			t.Errorf("%s: its schema has no type, enum or oneOf", path)
		}
		if v.Kind != yaml.MappingNode || s.Properties == nil || openObjects[path] {
			return
		}
		if s.AdditionalProperties != false {
			t.Errorf("%s: a settings object without additionalProperties: false", path)
		}
		var inValues []string
		for i := 0; i+1 < len(v.Content); i += 2 {
			k := v.Content[i].Value
			inValues = append(inValues, k)
			walk(strings.TrimPrefix(path+"."+k, "."), v.Content[i+1], s.Properties[k])
		}
		for k := range s.Properties {
			// global is Helm's, for subcharts; no chart sets it.
			if !slices.Contains(inValues, k) && !(path == "" && k == "global") {
				t.Errorf("%s: in values.schema.json but not in values.yaml", strings.TrimPrefix(path+"."+k, "."))
			}
		}
	}
	walk("", valuesDoc(t), schema)
}
