package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/lookup"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
)

// featureTopology compiles a feature contender's topology as its run
// does (the flags newFeatureRun gives it).
func featureTopology(t *testing.T, c contender, fo featureOpts) *plan.Plan {
	t.Helper()
	top, err := workloadTopologyWith(filepath.Join("..", "topologies", c.Workload+".yaml"), c.Guarantee, "in", "run7", "run7", []string{"127.0.0.1:9092"}, fo)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return top
}

func featureContender(t *testing.T, feature string) contender {
	t.Helper()
	i := slices.IndexFunc(featureContenders, func(c contender) bool { return c.Feature == feature })
	if i < 0 {
		t.Fatalf("no %s contender", feature)
	}
	return featureContenders[i]
}

// generated is the harness's input: records of every kind the
// generator makes, 1% malformed among them.
func generated(n int) []*kgo.Record {
	g := gen.New(1)
	rs := make([]*kgo.Record, n)
	for i := range rs {
		ev := g.Next()
		rs[i] = &kgo.Record{Topic: "in", Key: ev.Key, Value: ev.Value}
	}
	return rs
}

// routes is where W1 sends each record, by route topic with the computed
// main.N folded into main.
func routes(t *testing.T, top *plan.Plan, rs []*kgo.Record, opts ...stageone.Option) []string {
	t.Helper()
	e := stageone.New(top, opts...)
	var out []string
	for _, r := range rs {
		outs := e.Process(r, metrics.NewTally())
		if len(outs) != 1 {
			t.Fatalf("%d outputs for %s", len(outs), r.Value)
		}
		tp := outs[0].Topic
		if i := strings.LastIndex(tp, ".main."); i >= 0 {
			tp = tp[:i] + ".main"
		}
		out = append(out, tp)
	}
	return out
}

// The lookup contender's table topic is the harness's, and every record
// that parses makes exactly one lookup() (the predicate reads it first),
// routed as plain W1 routes it.
func TestLookupContender(t *testing.T) {
	c := featureContender(t, featLookup)
	top := featureTopology(t, c, featureOpts{tableTopic: "bench-users-x"})
	if len(top.Tables) != 1 || top.Tables[0].Name != tableName || top.Tables[0].Topic != "bench-users-x" {
		t.Fatalf("tables %+v", top.Tables)
	}
	tb, _ := lookup.New(lookup.Spec{Mode: lookup.Current})
	for k := tableBase; k < tableBase+tableRows; k++ {
		r, err := lookup.Decode(tableRow(k))
		if err != nil {
			t.Fatal(err)
		}
		tb.Apply(fmt.Sprint(k), 0, r)
	}
	calls, hits := 0, 0
	top.BindTables(func(_ string, key any, at int64) (any, bool, error) {
		calls++
		k, ok := lookup.KeyString(key)
		if !ok {
			return nil, false, nil
		}
		r, res := tb.Get(k, at)
		if res == lookup.Miss {
			return nil, false, nil
		}
		hits++
		return r, false, nil
	})
	rs := generated(2000)
	got := routes(t, top, rs)
	want := routes(t, featureTopology(t, contender{Workload: "w1", Guarantee: "eos"}, featureOpts{}), rs)
	if !slices.Equal(got, want) {
		t.Fatal("the lookup contender routes differently from W1")
	}
	dirty := 0
	for _, tp := range want {
		if tp == "run7.dirty" {
			dirty++
		}
	}
	if calls < len(rs)-dirty || calls > len(rs) || hits < calls*8/10 {
		t.Fatalf("%d lookups (%d hits) for %d records, %d dirty", calls, hits, len(rs), dirty)
	}
	t.Logf("%d records, %d dirty, %d lookups, %d hits", len(rs), dirty, calls, hits)
}

type existing struct{}

func (existing) Resolve(context.Context, *plan.RouteNode, string) error { return nil }

// The topic contender computes main's topic over exactly the four topics
// the harness creates, and otherwise routes as W1.
func TestTopicContender(t *testing.T) {
	c := featureContender(t, featTopic)
	top := featureTopology(t, c, featureOpts{})
	if cs := top.ComputedRoutes(); len(cs) != 1 || cs[0].Name != "main" {
		t.Fatalf("computed routes %v", cs)
	}
	if got := c.extraOutputs("run7"); !slices.Equal(got, []string{"run7.main.0", "run7.main.1", "run7.main.2", "run7.main.3"}) {
		t.Fatalf("extra outputs %v", got)
	}
	for _, tp := range c.extraOutputs("run7") {
		if !slices.Contains(valueTopics(c, "run7"), tp) || !slices.Contains(outputTopics(c, "run7"), tp) {
			t.Fatalf("%s is not read back or not created", tp)
		}
	}
	rs := generated(2000)
	e := stageone.New(top, stageone.WithTopics(existing{}))
	seen := map[string]int{}
	for _, r := range rs {
		for _, o := range e.Process(r, metrics.NewTally()) {
			seen[o.Topic]++
		}
	}
	for _, tp := range c.extraOutputs("run7") {
		if seen[tp] == 0 {
			t.Errorf("nothing routed to %s: %v", tp, seen)
		}
	}
	if !slices.Equal(routes(t, top, rs, stageone.WithTopics(existing{})),
		routes(t, featureTopology(t, contender{Workload: "w1", Guarantee: "eos"}, featureOpts{}), rs)) {
		t.Fatal("the topic contender routes differently from W1 (main.N folded)")
	}
	t.Logf("%v", seen)
}

// The four contender writes the topic contender's four topics by fixed
// routes, each about a quarter of main's records, and otherwise routes
// as W1.
func TestFourContender(t *testing.T) {
	c := featureContender(t, featFour)
	top := featureTopology(t, c, featureOpts{})
	if cs := top.ComputedRoutes(); len(cs) != 0 {
		t.Fatalf("computed routes %v", cs)
	}
	if got, want := c.extraOutputs("run7"), featureContender(t, featTopic).extraOutputs("run7"); !slices.Equal(got, want) {
		t.Fatalf("extra outputs %v, want the topic contender's %v", got, want)
	}
	rs := generated(4000)
	seen := map[string]int{}
	for _, r := range rs {
		for _, o := range stageone.New(top).Process(r, metrics.NewTally()) {
			seen[o.Topic]++
		}
	}
	main := 0
	for _, tp := range c.extraOutputs("run7") {
		main += seen[tp]
	}
	for _, tp := range c.extraOutputs("run7") {
		if seen[tp] < main/6 || seen[tp] > main/3 {
			t.Errorf("%s holds %d of main's %d records, not about a quarter: %v", tp, seen[tp], main, seen)
		}
	}
	if !slices.Equal(routes(t, top, rs), routes(t, featureTopology(t, contender{Workload: "w1", Guarantee: "eos"}, featureOpts{}), rs)) {
		t.Fatal("the four contender routes differently from W1 (main.N folded)")
	}
	t.Logf("%v", seen)
}

// The reload contender's two files are each a live change of the other
// that a running router applies, and route alike.
func TestReloadContender(t *testing.T) {
	c := featureContender(t, featReload)
	a := featureTopology(t, c, featureOpts{})
	b, err := workloadTopologyWith(filepath.Join("..", "topologies", reloadAltFile), "eos", "in", "run7", "run7", []string{"127.0.0.1:9092"}, featureOpts{})
	if err != nil {
		t.Fatal(err)
	}
	changes := plan.Diff(a, b)
	if len(changes) == 0 || a.Version == b.Version {
		t.Fatalf("no change: %v, versions %s %s", changes, a.Version, b.Version)
	}
	if refused := plan.ReloadRefusals(a, b, changes); len(refused) > 0 {
		t.Fatalf("refused: %v", refused)
	}
	if refused := plan.ReloadRefusals(b, a, plan.Diff(b, a)); len(refused) > 0 {
		t.Fatalf("refused back: %v", refused)
	}
	rs := generated(2000)
	if !slices.Equal(routes(t, a, rs), routes(t, b, rs)) {
		t.Fatal("the two files route differently")
	}
	args := mustFeatureRun(t, c).args
	if !slices.Contains(args, "--reload-alt") || !slices.Contains(args, "--listen") {
		t.Fatalf("args %v", args)
	}
}

// The trace contender exports spans at 1% over OTLP/HTTP to the
// harness's endpoint.
func TestTraceContender(t *testing.T) {
	c := featureContender(t, featTrace)
	top := featureTopology(t, c, featureOpts{otlp: "http://127.0.0.1:1/v1/traces"})
	tr := top.Settings.Tracing
	if !tr.Spans || tr.SampleRatioOrDefault() != 0.01 || tr.Protocol != config.TracingHTTP || tr.Endpoint != "http://127.0.0.1:1/v1/traces" {
		t.Fatalf("tracing %+v", tr)
	}
	fr := mustFeatureRun(t, c)
	i := slices.Index(fr.args, "--otlp")
	if i < 0 || fr.args[i+1] != fr.sink.url() {
		t.Fatalf("args %v", fr.args)
	}
}

func mustFeatureRun(t *testing.T, c contender) *featureRun {
	t.Helper()
	fr, err := newFeatureRun(c, compareEnv{tableTopic: "x"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fr.close)
	return fr
}

// The OTLP endpoint decodes an export request, counts its spans and
// answers as a collector does.
func TestOTLPSink(t *testing.T) {
	s, err := startOTLPSink()
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	req := &coltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{
		{Spans: []*tracepb.Span{{Name: "a"}, {Name: "b"}}}, {Spans: []*tracepb.Span{{Name: "c"}}}}}}}
	b, _ := proto.Marshal(req)
	resp, err := http.Post(s.url(), "application/x-protobuf", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || s.spans.Load() != 3 || s.requests.Load() != 1 {
		t.Fatalf("status %d, %d spans, %d requests", resp.StatusCode, s.spans.Load(), s.requests.Load())
	}
}

func TestMetricValue(t *testing.T) {
	text := `# HELP sidestream_reloads_total x
sidestream_reloads_total{outcome="applied"} 3
sidestream_reloads_total{outcome="failed"} 0
sidestream_reloads_total_other 9
sidestream_table_lookups_total{result="hit",table="users"} 1.5e+06
sidestream_table_lookups_total{result="miss",table="users"} 12
`
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sidestream_reloads_total", []string{`outcome="applied"`}, 3},
		{"sidestream_reloads_total", nil, 3},
		{"sidestream_table_lookups_total", []string{`table="users"`, `result="hit"`}, 1.5e6},
		{"sidestream_table_lookups_total", []string{`table="users"`}, 1.5e6 + 12},
		{"sidestream_table_rows", nil, 0},
	} {
		if got := metricValue(text, c.name, c.labels...); got != c.want {
			t.Errorf("%s %v: %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// The feature contenders are left out of the default set and picked by
// name.
func TestPickFeatureContenders(t *testing.T) {
	all, err := pick("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Feature != "" {
			t.Errorf("%s in the default set", c.Name)
		}
	}
	cs, err := pick("sidestream-w1-eos, sidestream-w1-eos-lookup,sidestream-w1-eos-topic,sidestream-w1-eos-reload,sidestream-w1-eos-trace")
	if err != nil || len(cs) != 5 || cs[1].Feature != featLookup || cs[4].Feature != featTrace {
		t.Fatalf("%v %v", cs, err)
	}
	if !sessionUsesLookup(cs) || sessionUsesLookup(all) {
		t.Error("sessionUsesLookup")
	}
	// Each compiles where the harness checks it (pickActive).
	for _, c := range featureContenders {
		if _, err := c.command(compareEnv{topologies: filepath.Join("..", "topologies"), self: "x"}, "b", "i", "p", "g"); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
}

// statusMB reads this process's own peak RSS: the figure tableload and
// the compare runs report.
func TestStatusMB(t *testing.T) {
	pid := fmt.Sprint(os.Getpid())
	if hwm, rss := statusMB(pid, "VmHWM:"), statusMB(pid, "VmRSS:"); hwm <= 0 || rss <= 0 || peakRSS(pid) < hwm {
		t.Fatalf("VmHWM %v MB, VmRSS %v MB", hwm, rss)
	}
}
