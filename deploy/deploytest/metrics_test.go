package deploytest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// declaredMetrics reads the Name* constants of the metrics package: the
// one place every metric name is declared.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "internal", "metrics", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		declaredIn(t, f, names)
	}
	if len(names) < 10 {
		t.Fatalf("found only %d Name* constants in internal/metrics/", len(names))
	}
	return names
}

func declaredIn(t *testing.T, f *ast.File, names map[string]bool) {
	t.Helper()
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Name") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					names[v] = true
				}
			}
		}
	}
}

var metricRe = regexp.MustCompile(`\bsidestream_[a-z0-9_]+`)

// undeclared returns the metric names a PromQL expression uses that
// metrics.go does not declare. A histogram's series (_bucket, _sum,
// _count) count as its name.
func undeclared(declared map[string]bool, expr string) []string {
	var bad []string
	for _, m := range metricRe.FindAllString(expr, -1) {
		if declared[m] {
			continue
		}
		base := m
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(m, suffix); ok {
				base = b
				break
			}
		}
		if !declared[base] || base == m {
			bad = append(bad, m)
		}
	}
	return bad
}

func TestUndeclaredCatchesUnknownNames(t *testing.T) {
	declared := map[string]bool{"sidestream_a_total": true, "sidestream_b_seconds": true}
	for expr, want := range map[string][]string{
		`rate(sidestream_a_total[5m])`:                                   nil,
		`histogram_quantile(0.9, rate(sidestream_b_seconds_bucket[5m]))`: nil,
		`sidestream_b_seconds_sum / sidestream_b_seconds_count`:          nil,
		`sidestream_restore_seconds > 1`:                                 {"sidestream_restore_seconds"},
		`rate(sidestream_c_total_bucket[1m]) + sidestream_a`:             {"sidestream_c_total_bucket", "sidestream_a"},
	} {
		if got := undeclared(declared, expr); !slices.Equal(got, want) {
			t.Errorf("undeclared(%q) = %q, want %q", expr, got, want)
		}
	}
}

// dashboard is the part of a Grafana dashboard with queries.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		Expr         string `json:"expr"`
		RefID        string `json:"refId"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // inside a collapsed row
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "sidestream.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("deploy/grafana/sidestream.json: %v", err)
	}
	return d
}

func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// dashboardQueries lists every PromQL expression of the dashboard, with
// where it is.
func dashboardQueries(d dashboard) map[string]string {
	q := map[string]string{}
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			q["panel "+strconv.Quote(p.Title)+" "+tg.RefID] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		switch x := v.Query.(type) {
		case string:
			q["variable "+v.Name] = x
		case map[string]any:
			if s, ok := x["query"].(string); ok {
				q["variable "+v.Name] = s
			}
		}
	}
	return q
}

func TestDashboardMetricsExist(t *testing.T) {
	declared := declaredMetrics(t)
	d := loadDashboard(t)
	queries := dashboardQueries(d)
	used := map[string]bool{}
	for where, expr := range queries {
		for _, m := range undeclared(declared, expr) {
			t.Errorf("dashboard %s queries %s, which internal/metrics/metrics.go does not declare", where, m)
		}
		for _, m := range metricRe.FindAllString(expr, -1) {
			used[m] = true
		}
	}
	// What the dashboard is for.
	for _, m := range []string{"sidestream_records_consumed_total", "sidestream_route_records_written_total", "sidestream_repartition_records_consumed_total",
		"sidestream_records_dirty_total", "sidestream_consumer_lag_records", "sidestream_commit_duration_seconds_bucket",
		"sidestream_txn_aborts_total", "sidestream_ready", "sidestream_assigned_partitions",
		"sidestream_changelog_loss_total", "sidestream_state_overflow_total", "sidestream_assembly_parts_total",
		"sidestream_objective_value", "sidestream_objective_paused", "sidestream_reloads_total", "sidestream_route_held",
		"sidestream_table_lookups_total"} {
		if !used[m] {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
}

func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Error("dashboard without uid or title")
	}
	ids := map[int]bool{}
	for _, p := range allPanels(d.Panels) {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			t.Errorf("panel %q gridPos %+v outside the 24-column grid", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the $datasource variable", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "sidestream_") && !strings.Contains(tg.Expr, `job="$job"`) {
				t.Errorf("panel %q query does not select $job: %s", p.Title, tg.Expr)
			}
		}
	}
}

// TestAlertMetricsExist checks the PrometheusRule's expressions: from every
// rendered value set when Helm is there, and from the template's text
// always.
func TestAlertMetricsExist(t *testing.T) {
	declared := declaredMetrics(t)
	tpl, err := os.ReadFile(filepath.Join(root, chartDir, "templates", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exprs := map[string]string{"templates/prometheusrule.yaml": string(tpl)}
	if !helmSkipped() {
		for _, s := range valueSets(t) {
			args := append(slices.Clone(s.args), "--set", "monitoring.prometheusRule.enabled=true")
			for i, e := range ruleExprs(t, parse(t, template(t, args...))) {
				exprs[s.name+" rule "+strconv.Itoa(i)] = e
			}
		}
	}
	for where, e := range exprs {
		for _, m := range undeclared(declared, e) {
			t.Errorf("%s uses %s, which internal/metrics/metrics.go does not declare", where, m)
		}
	}
}
