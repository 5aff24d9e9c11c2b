package deploytest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sidestream/sidestream/internal/metrics"
)

// metricLabels are the variable labels of every collector the router
// registers, by metric name (a histogram's series share its labels).
func metricLabels(t *testing.T) map[string]map[string]bool {
	t.Helper()
	ch := make(chan *prometheus.Desc, 1024)
	go func() { metrics.New().Registry.Describe(ch); close(ch) }()
	nameRe := regexp.MustCompile(`fqName: "([^"]+)"`)
	labelsRe := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	out := map[string]map[string]bool{}
	for d := range ch {
		s := d.String()
		n := nameRe.FindStringSubmatch(s)
		if n == nil {
			continue
		}
		ls := map[string]bool{}
		if l := labelsRe.FindStringSubmatch(s); l != nil {
			for _, x := range strings.Split(l[1], ",") {
				if x = strings.TrimSpace(x); x != "" {
					ls[x] = true
				}
			}
		}
		out[n[1]] = ls
	}
	if len(out) < 10 {
		t.Fatalf("described only %d metrics", len(out))
	}
	return out
}

// scrapeLabels come from the scrape, not the router: any query may use
// them.
var scrapeLabels = map[string]bool{"namespace": true, "job": true, "pod": true, "instance": true, "le": true}

var (
	byRe     = regexp.MustCompile(`\bby \(([^)]*)\)`)
	legendRe = regexp.MustCompile(`\{\{\s*([a-z_]+)\s*\}\}`)
)

// TestDashboardLabelsExist: every label a panel groups by or names in
// its legend is a label of a metric its query reads, so a renamed label
// (result, not outcome) fails here instead of drawing an empty panel.
func TestDashboardLabelsExist(t *testing.T) {
	labels := metricLabels(t)
	d := loadDashboard(t)
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			var has []map[string]bool
			for _, m := range metricRe.FindAllString(tg.Expr, -1) {
				base := m
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suffix); ok && labels[b] != nil {
						base = b
					}
				}
				has = append(has, labels[base])
			}
			var used []string
			for _, g := range byRe.FindAllStringSubmatch(tg.Expr, -1) {
				used = append(used, strings.Split(g[1], ",")...)
			}
			for _, g := range legendRe.FindAllStringSubmatch(tg.LegendFormat, -1) {
				used = append(used, g[1])
			}
			for _, l := range used {
				l = strings.TrimSpace(l)
				if l == "" || scrapeLabels[l] || anyHas(has, l) {
					continue
				}
				t.Errorf("panel %q %s uses label %q, which no metric of its query has: %s", p.Title, tg.RefID, l, tg.Expr)
			}
		}
	}
}

func anyHas(sets []map[string]bool, l string) bool {
	for _, s := range sets {
		if s[l] {
			return true
		}
	}
	return false
}
