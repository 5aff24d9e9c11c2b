package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDashboardConservationGapOnDemo runs demos, the assembly ones among
// them, and evaluates the Grafana "Conservation gap" panel's query on the
// lingering demo's /metrics: it must read 0, as the demo's verdict
// (metrics.Snapshot.Conserved) does.
func TestDashboardConservationGapOnDemo(t *testing.T) {
	expr := dashboardExpr(t, "Conservation gap")
	for _, example := range []string{"late-orders.yaml", "assemble-orders.yaml", "order-payment-shipment.yaml"} {
		t.Run(example, func(t *testing.T) {
			var out, errb syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- runTo(Options{Config: "../../examples/" + example, Records: 2000, Quiet: true, Linger: 30 * time.Second}, &out, &errb)
			}()
			re := regexp.MustCompile(`web view at http://(\S+)/ui\n`)
			var addr string
			for deadline := time.Now().Add(2 * time.Minute); addr == "" || !strings.Contains(errb.String(), "stay up for"); time.Sleep(20 * time.Millisecond) {
				if m := re.FindStringSubmatch(errb.String()); m != nil {
					addr = m[1]
				}
				if time.Now().After(deadline) {
					t.Fatalf("the demo did not reach its verdict: %s", errb.String())
				}
				select {
				case code := <-done:
					t.Fatalf("demo ended with %d: %s %s", code, out.String(), errb.String())
				default:
				}
			}
			if !strings.Contains(out.String(), `"conservation":true`) {
				t.Fatalf("demo verdict: %s", out.String())
			}
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			series := parseExposition(t, string(body))
			gap, err := evalSumExpr(expr, series)
			if err != nil {
				t.Fatalf("panel query %q: %v", expr, err)
			}
			if gap != 0 {
				t.Errorf("conservation gap panel reads %v on a conserved demo", gap)
			}
			checkBuildAndWatermark(t, series, example == "late-orders.yaml")
			// Cut the linger short: SIGINT is what the demo waits for.
			interruptSelf(t)
			if code := <-done; code != 0 {
				t.Errorf("demo exit %d", code)
			}
		})
	}
}

// dashboardExpr returns the query of the dashboard panel titled title.
func dashboardExpr(t *testing.T, title string) string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/grafana/sidestream.json")
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string
		Targets []struct{ Expr string }
		Panels  []json.RawMessage
	}
	var d struct{ Panels []panel }
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		if p.Title == title && len(p.Targets) == 1 {
			return p.Targets[0].Expr
		}
	}
	t.Fatalf("no panel %q with one query", title)
	return ""
}

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseExposition reads the Prometheus text format (no timestamps).
func parseExposition(t *testing.T, text string) []sample {
	t.Helper()
	var out []sample
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			t.Fatalf("exposition line %q: %v", line, err)
		}
		s := sample{name: line[:sp], labels: map[string]string{}, value: v}
		if i := strings.IndexByte(s.name, '{'); i >= 0 {
			for _, kv := range regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(s.name[i:], -1) {
				s.labels[kv[1]] = kv[2]
			}
			s.name = s.name[:i]
		}
		out = append(out, s)
	}
	return out
}

var (
	sumTerm  = regexp.MustCompile(`^\(?sum\((sidestream_\w+)(?:\{([^}]*)\})?\)(?: or vector\(0\)\))?$`)
	matcher  = regexp.MustCompile(`^(\w+)(=~|=)"([^"]*)"$`)
	scrapeLb = map[string]bool{"namespace": true, "job": true, "pod": true} // added by Prometheus, not the router
)

// evalSumExpr evaluates the one shape of PromQL the gap panel uses: terms
// `(sum(METRIC{matchers}) or vector(0))` joined by + and -. Anything
// else is an error, so the panel cannot drift into a form this test
// does not evaluate.
func evalSumExpr(expr string, series []sample) (float64, error) {
	var terms []string
	var signs []float64
	depth, start, sign := 0, 0, 1.0
	for i, c := range expr {
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth--
		case depth == 0 && (c == '+' || c == '-'):
			terms, signs = append(terms, strings.TrimSpace(expr[start:i])), append(signs, sign)
			start, sign = i+1, 1
			if c == '-' {
				sign = -1
			}
		}
	}
	terms, signs = append(terms, strings.TrimSpace(expr[start:])), append(signs, sign)
	total := 0.0
	for i, term := range terms {
		m := sumTerm.FindStringSubmatch(term)
		if m == nil {
			return 0, fmt.Errorf("term %q is not (sum(METRIC{...}) or vector(0))", term)
		}
		var want [][3]string
		if m[2] != "" {
			for _, part := range strings.Split(m[2], ",") {
				mm := matcher.FindStringSubmatch(part)
				if mm == nil {
					return 0, fmt.Errorf("matcher %q", part)
				}
				if !scrapeLb[mm[1]] {
					want = append(want, [3]string{mm[1], mm[2], mm[3]})
				}
			}
		}
		found := false
		for _, s := range series {
			if s.name != m[1] {
				continue
			}
			ok := true
			for _, w := range want {
				v := s.labels[w[0]]
				if w[1] == "=" && v != w[2] || w[1] == "=~" && !regexp.MustCompile("^(?:"+w[2]+")$").MatchString(v) {
					ok = false
				}
			}
			if ok {
				total += signs[i] * s.value
				found = true
			}
		}
		if !found && !strings.Contains(term, "or vector(0)") {
			return 0, fmt.Errorf("term %q matches no series and has no `or vector(0)`", term)
		}
	}
	return total, nil
}

// interruptSelf sends SIGINT to this process, as Ctrl-C would; the demo
// listens for it before it says so.
func interruptSelf(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
}

// checkBuildAndWatermark: sidestream_build_info is one series at 1 with
// the three labels; each task's watermark in seconds is its deprecated
// milliseconds gauge / 1000.
func checkBuildAndWatermark(t *testing.T, series []sample, windows bool) {
	t.Helper()
	b := testBuild
	var builds, marks int
	ms := map[string]float64{}
	for _, s := range series {
		if s.name == "sidestream_watermark_milliseconds" {
			ms[s.labels["route"]+"/"+s.labels["partition"]] = s.value
		}
	}
	for _, s := range series {
		switch s.name {
		case "sidestream_build_info":
			builds++
			if s.value != 1 || s.labels["version"] != b.Version || s.labels["revision"] != b.Revision || s.labels["goversion"] != b.GoVersion {
				t.Errorf("build info %v = %v, want %+v = 1", s.labels, s.value, b)
			}
		case "sidestream_watermark_timestamp_seconds":
			marks++
			if want, ok := ms[s.labels["route"]+"/"+s.labels["partition"]]; !ok || s.value != want/1000 {
				t.Errorf("watermark %v: %v s, milliseconds gauge %v", s.labels, s.value, want)
			}
		}
	}
	if builds != 1 {
		t.Errorf("%d sidestream_build_info series, want 1", builds)
	}
	if windows && (marks == 0 || marks != len(ms)) {
		t.Errorf("%d watermark timestamp series, %d milliseconds ones", marks, len(ms))
	}
}
