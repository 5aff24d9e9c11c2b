package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// opaque values are documented as one row, not key by key.
var opaque = map[string]bool{
	"topology": true, "schemas": true, "resources": true, "podSecurityContext": true, "securityContext": true,
	"probes.startup": true, "probes.liveness": true, "probes.readiness": true, "networkPolicy.prometheusPodSelector": true,
	"tests.resources": true,
}

// valuePaths lists the chart's values as dotted paths: maps are walked,
// except opaque ones and each alert's settings.
func valuePaths(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := n.Content[i].Value
			if prefix != "" {
				p = prefix + "." + p
			}
			v := n.Content[i+1]
			if v.Kind == yaml.MappingNode && len(v.Content) > 0 && !opaque[p] && prefix != "monitoring.prometheusRule.alerts" {
				walk(p, v)
				continue
			}
			paths = append(paths, p)
		}
	}
	walk("", doc.Content[0])
	return paths
}

// TestDocsLinkTheValuesTable: docs/deploy.md points at the chart README's
// generated values table (TestChartReadmeValues keeps that complete)
// instead of keeping a copy.
func TestDocsLinkTheValuesTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "(../deploy/helm/sidestream/README.md#values)") {
		t.Error("docs/deploy.md does not link the chart README's values table")
	}
	if paths := valuePaths(t); len(paths) < 50 {
		t.Fatalf("found only %d values in values.yaml", len(paths))
	}
}

// TestReadmeListsTopLevelValues keeps the values table of docs/deploy.md's
// "Deploy on Kubernetes" section complete: every top-level value of the
// chart is named in some row's first column (alone or as `name.…`).
func TestReadmeListsTopLevelValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Deploy on Kubernetes\n")
	if !ok {
		t.Fatal(`docs/deploy.md has no "## Deploy on Kubernetes" section`)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range regexp.MustCompile("`([A-Za-z]+)[^`]*`").FindAllStringSubmatch(first, -1) {
			documented[m[1]] = true
		}
	}
	top := map[string]bool{}
	for _, p := range valuePaths(t) {
		top[strings.SplitN(p, ".", 2)[0]] = true
	}
	for v := range top {
		if !documented[v] {
			t.Errorf("top-level value %s is not in the README's values table", v)
		}
	}
}
