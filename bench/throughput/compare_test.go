package main

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"pgregory.net/rapid"
)

func TestIDNumber(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{`{"id":"l-42","ts":1}`, 42, true},
		{`{"ts":1,"id":"l-7"}`, 7, true},
		{`{"id":"e-42"}`, 0, false},
		{`{"id":"w-3"}`, 0, false},
		{`{"id":"l-"}`, 0, false},
		{``, 0, false},
	} {
		got, ok := idNumber([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("idNumber(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 1<<40).Draw(t, "n")
		pre := rapid.StringMatching(`[a-z{":,]{0,20}`).Draw(t, "pre")
		v := pre + `"id":"l-` + strconv.Itoa(n) + `","level":"INFO"}`
		if strings.Contains(pre, `"id":"l-`) {
			t.Skip("prefix holds a marker")
		}
		got, ok := idNumber([]byte(v))
		if !ok || got != n {
			t.Fatalf("idNumber(%q) = %d, %v; want %d", v, got, ok, n)
		}
	})
}

func TestMediansTakeEachMeasureMedian(t *testing.T) {
	runs := []run{
		{Contender: "a", RecordsPS: 100, CPUPerM: 9, PeakRSSMB: 30},
		{Contender: "a", RecordsPS: 300, CPUPerM: 1, PeakRSSMB: 10},
		{Contender: "a", RecordsPS: 200, CPUPerM: 5, PeakRSSMB: 20},
		{Contender: "b", RecordsPS: 50},
	}
	m := medians(runs)
	if a := m["a"]; a.RecordsPS != 200 || a.CPUPerM != 5 || a.PeakRSSMB != 20 || a.Rep != 3 {
		t.Errorf("median of a = %+v", a)
	}
	if b := m["b"]; b.RecordsPS != 50 || b.Rep != 1 {
		t.Errorf("median of b = %+v", b)
	}
}

func TestGoals(t *testing.T) {
	rows := rows(allContenders, map[string]run{
		"limit-alo":         {RecordsPS: 1000, CPUPerM: 1, PeakRSSMB: 20},
		"limit-eos":         {RecordsPS: 900, CPUPerM: 1.2, PeakRSSMB: 40},
		"sidestream-w1-eos": {RecordsPS: 600, CPUPerM: 2.3, PeakRSSMB: 30},
		"sidestream-w2-eos": {RecordsPS: 500, CPUPerM: 7.2, PeakRSSMB: 40},
		"streams-w1-eos":    {RecordsPS: 400, CPUPerM: 10, PeakRSSMB: 200},
	}, nil, []latency{
		{Contender: "sidestream-w1-eos", P99MS: 100, Seen: 1, Sent: 1, Timed: 1},
		{Contender: "limit-eos", P99MS: 90, Seen: 1, Sent: 1, Timed: 1},
	}, map[string]string{"streams-w2-eos": "not built"})
	want := map[string]string{
		"sidestream-w1-eos CPU per record / limit-eos": "no", // 1.92 > 1.4
		"sidestream-w2-eos CPU per record / limit-eos": "no", // 6.0
		"sidestream-w3-eos CPU per record / limit-eos": "unmeasured",
		"sidestream-w1-eos throughput / limit-alo":     "yes", // 0.6
		"sidestream-w1-eos peak RSS / limit-eos":       "yes", // 0.75
		"sidestream-w1-eos peak RSS / streams-w1-eos":  "yes", // 0.15
		"sidestream-w1-eos p99 end-to-end latency / limit-eos, both at one load that saturates neither (the p99 goal's load)": "no",  // 1.11 (one rate for all)
		"sidestream-w1-eos records per CPU-second / streams-w1-eos":                                                           "yes", // 4.35
		"sidestream-w2-eos records per CPU-second / streams-w2-eos":                                                           "unmeasured",
	}
	gs := goals(rows)
	if len(gs) != len(want) {
		t.Fatalf("%d goals, want %d: %+v", len(gs), len(want), gs)
	}
	for _, g := range gs {
		got := "unmeasured"
		if g.Met != nil {
			got = map[bool]string{true: "yes", false: "no"}[*g.Met]
		}
		if want[g.What] != got {
			t.Errorf("goal %q: %s (measured %.2f), want %s", g.What, got, g.Measured, want[g.What])
		}
	}
}

func TestWriteDocsReplacesOnlyItsBlock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(path, []byte("# Benchmarks\n\nolder text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := report{Command: "bench/compare.sh", Records: 10, Bytes: 3000, Reps: 3,
		Rows: []row{{contender: allContenders[0], Runs: 3, RecordsPS: 1234}}}
	for range 2 {
		if err := writeDocs(path, rep, filepath.Join(dir, "c.png")); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	s := string(b)
	if !strings.HasPrefix(s, "# Benchmarks\n\nolder text\n") {
		t.Errorf("the text before the block changed:\n%s", s)
	}
	if strings.Count(s, docsBegin) != 1 || strings.Count(s, docsEnd) != 1 || strings.Count(s, "## Against the limit") != 1 {
		t.Errorf("want one block after two writes:\n%s", s)
	}
	if !strings.Contains(s, "| limit-alo | limit | pass | alo | 3 | 1234 |") || !strings.Contains(s, "](c.png)") {
		t.Errorf("block lacks the row or the chart link:\n%s", s)
	}
}

func TestDrawChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.png")
	rep := report{Reps: 3, Rows: []row{
		{contender: allContenders[0], RecordsPS: 500000, P50MS: 10, P99MS: 40},
		{contender: allContenders[3], RecordsPS: 200000, P50MS: 60, P99MS: 130},
		{contender: allContenders[7], Skipped: "not built"},
	}}
	if err := drawChart(path, rep); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// Two drawn lines (the skipped contender has none) below the header.
	if h := img.Bounds().Dy(); h != 50+2*26+40 {
		t.Errorf("chart height %d, want %d", h, 50+2*26+40)
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 0, 1: 1, 7: 10, 12: 20, 120: 200, 480000: 500000, 0.3: 0.5} {
		if got := niceCeil(in); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.Float64Range(1e-3, 1e9).Draw(t, "v")
		if c := niceCeil(v); c < v || c > 5*v {
			t.Fatalf("niceCeil(%v) = %v", v, c)
		}
	})
}

func TestTopicsReady(t *testing.T) {
	parts := func(leaders ...int32) kadm.PartitionDetails {
		ps := kadm.PartitionDetails{}
		for i, l := range leaders {
			ps[int32(i)] = kadm.PartitionDetail{Partition: int32(i), Leader: l}
		}
		return ps
	}
	md := kadm.Metadata{Topics: kadm.TopicDetails{
		"a": {Topic: "a", Partitions: parts(1, 1)},
		"b": {Topic: "b", Partitions: parts(1, -1)},
	}}
	if ok, seen := topicsReady(md, []string{"a"}, 2); !ok {
		t.Fatalf("a is ready, got not ready: %s", seen)
	}
	ok, seen := topicsReady(md, []string{"a", "b", "c"}, 2)
	if ok || !strings.Contains(seen, "c (absent)") || !strings.Contains(seen, "1 partitions without a leader") {
		t.Fatalf("want c absent and one leaderless partition, got ok=%v %q", ok, seen)
	}
	if ok, seen := topicsReady(md, []string{"a"}, 6); ok || !strings.Contains(seen, "a (2 partitions)") {
		t.Fatalf("want a short of partitions, got ok=%v %q", ok, seen)
	}
}

func TestWaitUntil(t *testing.T) {
	n := 0
	if err := waitUntil(context.Background(), time.Minute, time.Millisecond, "three polls", func() (bool, string) {
		n++
		return n == 3, strconv.Itoa(n)
	}); err != nil || n != 3 {
		t.Fatalf("waitUntil = %v after %d polls, want nil after 3", err, n)
	}
	err := waitUntil(context.Background(), 20*time.Millisecond, time.Millisecond, "never", func() (bool, string) { return false, "still no" })
	if err == nil || !strings.Contains(err.Error(), "for never; last seen: still no") {
		t.Fatalf("waitUntil past its ceiling = %v, want what it waited for and saw", err)
	}
}

// TestLatencySplit: each seen record's latency splits at the broker's
// acknowledgement; a record never seen is in none of the three, and an
// acknowledgement that came after the record was seen counts 0 after it.
func TestLatencySplit(t *testing.T) {
	pr := &latencyProbe{total: 4, sent: make([]atomic.Int64, 5), acked: make([]atomic.Int64, 5), seenAt: make([]atomic.Int64, 5)}
	ms := int64(time.Millisecond)
	set := func(i int, sent, ack, seen int64) {
		pr.sent[i].Store(sent * ms)
		pr.acked[i].Store(ack * ms)
		pr.seenAt[i].Store(seen * ms)
	}
	set(1, 100, 130, 300) // 200 = 30 + 170
	set(2, 100, 400, 350) // acknowledged after it was seen
	set(3, 100, 110, 0)   // never seen
	set(4, 200, 0, 260)   // seen, its acknowledgement not (yet) received
	e2e, acked, after := pr.split()
	want := func(name string, got []time.Duration, ms ...int) {
		t.Helper()
		var w []time.Duration
		for _, m := range ms {
			w = append(w, time.Duration(m)*time.Millisecond)
		}
		if !slices.Equal(got, w) {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
	want("sent to seen", e2e, 60, 200, 250)
	want("sent to acked", acked, 30, 300)
	want("acked to seen", after, 0, 170)
	if q := quantile(e2e, 0.5); q != 200 {
		t.Errorf("p50 = %v ms, want 200", q)
	}
	if q := quantile(nil, 0.99); q != 0 {
		t.Errorf("quantile of none = %v, want 0", q)
	}
}

// TestP99GoalAtTheGoalLoad: the p99 goal divides sidestream-w1-eos's p99
// by the limit's at the p99 goal's load (the medians of their phases
// there), never by their own-rate phases; it is unmeasured when the
// harness could not send the load in a phase, when the two were offered
// different loads, or when there are no phases at one load; with one
// --latency-rate for all and no goal phases, the own phases count.
func TestP99GoalAtTheGoalLoad(t *testing.T) {
	med := map[string]run{
		"limit-alo":         {RecordsPS: 1000, CPUPerM: 1},
		"limit-eos":         {RecordsPS: 900, CPUPerM: 1},
		"sidestream-w1-eos": {RecordsPS: 600, CPUPerM: 2},
	}
	ph := func(name, at string, rep int, rate, sent, p99 float64) latency {
		return latency{Contender: name, AtRateOf: at, Rep: rep, RatePS: rate, SentPS: sent, P99MS: p99, Seen: 10, Timed: 10, MachineBusy: 0.5}
	}
	own := []latency{
		ph("sidestream-w1-eos", "", 1, 300, 300, 120), ph("sidestream-w1-eos", "", 2, 300, 300, 900), ph("sidestream-w1-eos", "", 3, 300, 300, 110),
		ph("limit-eos", "", 1, 450, 450, 800), ph("limit-eos", "", 2, 450, 450, 700), ph("limit-eos", "", 3, 450, 450, 900),
	}
	p99 := func(lats []latency) goal {
		t.Helper()
		for _, g := range goals(rows(allContenders, med, nil, lats, nil)) {
			if strings.HasPrefix(g.What, "sidestream-w1-eos p99") {
				return g
			}
		}
		t.Fatal("no p99 goal")
		return goal{}
	}
	at := append(slices.Clone(own),
		ph("sidestream-w1-eos", atGoalLoad, 1, 225, 225, 90), ph("sidestream-w1-eos", atGoalLoad, 2, 225, 224, 60), ph("sidestream-w1-eos", atGoalLoad, 3, 225, 225, 3000),
		ph("limit-eos", atGoalLoad, 1, 225, 225, 100), ph("limit-eos", atGoalLoad, 2, 225, 225, 2000), ph("limit-eos", atGoalLoad, 3, 225, 225, 80))
	g := p99(at)
	if g.Met == nil || !*g.Met || g.Measured != 90.0/100 || !strings.Contains(g.Note, "225 records/s") {
		t.Errorf("at the goal load: %+v, want 90/100 (the medians), met, the load in the note", g)
	}
	for _, r := range rows(allContenders, med, nil, at, nil) {
		if r.Name == "limit-eos" && (r.P99MS != 800 || r.Seen != "30/30" || r.LatencyPS != 450 || r.GoalP99MS != 100) {
			t.Errorf("limit-eos row: p99 %v seen %s rate %v goal p99 %v, want 800, 30/30, 450 (its own phases) and 100", r.P99MS, r.Seen, r.LatencyPS, r.GoalP99MS)
		}
	}
	short := slices.Clone(at)
	short[len(short)-1].SentPS = 200 // 89% of the offered load in one phase
	if g := p99(short); g.Met != nil || !strings.Contains(g.Note, "saturated") {
		t.Errorf("the harness short of the load: %+v, want unmeasured, saying why", g)
	}
	other := slices.Clone(at)
	for i := range other {
		if other[i].Contender == "limit-eos" && other[i].AtRateOf == atGoalLoad {
			other[i].RatePS, other[i].SentPS = 300, 300
		}
	}
	if g := p99(other); g.Met != nil {
		t.Errorf("different loads: %+v, want unmeasured", g)
	}
	if g := p99(own); g.Met != nil {
		t.Errorf("different rates, no goal-load phase: %+v, want unmeasured", g)
	}
	atOne := []latency{ph("sidestream-w1-eos", "", 1, 200, 200, 100), ph("limit-eos", "", 1, 200, 200, 200)} // --latency-rate
	if g := p99(atOne); g.Met == nil || !*g.Met || g.Measured != 0.5 {
		t.Errorf("one rate for all: %+v, want 0.5, met", g)
	}
}
