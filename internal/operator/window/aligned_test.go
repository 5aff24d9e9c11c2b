package window

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// srcRec is one record of a source's stream. here is false for a record
// of the source that went to another task: it still raised the source's
// progress (its marks say so) but is not delivered to this one.
type srcRec struct {
	src, idx int
	key      string
	t        int64
	vals     []any
	here     bool
	before   int64 // the source's maximum event time before this record
}

// genAlignedSpec draws a tumbling or hopping spec whose aggregations do
// not depend on arrival order among equal event times (first and last
// break such ties by arrival).
func genAlignedSpec(t *rapid.T) Spec {
	s := Spec{
		Kind:              rapid.SampledFrom([]Kind{Tumbling, Hopping}).Draw(t, "kind"),
		MaxOutOfOrderness: msd(rapid.Int64Range(0, 20).Draw(t, "ooo")),
		Grace:             msd(rapid.Int64Range(0, 40).Draw(t, "grace")),
		Emit:              rapid.SampledFrom([]EmitMode{EmitUpdate, EmitFinal}).Draw(t, "emit"),
	}
	size := rapid.Int64Range(1, 30).Draw(t, "size")
	s.Size = msd(size)
	if s.Kind == Hopping {
		s.Advance = msd(rapid.Int64Range(max(1, size/6), size).Draw(t, "advance"))
	}
	kinds := []AggKind{Count, Sum, Min, Max, Avg, DistinctCount}
	for i := range rapid.IntRange(1, 3).Draw(t, "naggs") {
		s.Aggregations = append(s.Aggregations, Aggregation{Name: fmt.Sprintf("a%d", i), Kind: rapid.SampledFrom(kinds).Draw(t, "agg")})
	}
	return s
}

// genSources draws each source's stream, in its own order, with its own
// clock, jitter and far-late records.
func genSources(t *rapid.T, s Spec) [][]srcRec {
	nsrc := rapid.IntRange(1, 4).Draw(t, "nsrc")
	keys := []string{"a", "b", "c"}[:rapid.IntRange(1, 3).Draw(t, "nkeys")]
	out := make([][]srcRec, nsrc)
	for i := range out {
		clock := rapid.Int64Range(-60, 60).Draw(t, "clock0")
		jitter := rapid.SampledFrom([]int64{0, 3, 10, 30}).Draw(t, "jitter")
		before := int64(math.MinInt64)
		for j := range rapid.IntRange(0, 30).Draw(t, "n") {
			var back int64
			switch k := rapid.IntRange(0, 99).Draw(t, "kind"); {
			case k < 10: // the same time again
			case k < 15:
				back = rapid.Int64Range(40, 200).Draw(t, "farlate")
			default:
				clock += rapid.Int64Range(0, 6).Draw(t, "tick")
			}
			tm := clock - back - rapid.Int64Range(0, jitter).Draw(t, "jit")
			vals := make([]any, len(s.Aggregations))
			for a, ag := range s.Aggregations {
				vals[a] = genValue(t, ag.Kind)
			}
			r := srcRec{src: i, idx: j, key: rapid.SampledFrom(keys).Draw(t, "key"), t: tm, vals: vals,
				here: rapid.IntRange(0, 4).Draw(t, "here") > 0, before: before}
			out[i] = append(out[i], r)
			before = max(before, tm)
		}
	}
	return out
}

func srcName(i int) string { return fmt.Sprintf("in/%d", i) }

// alignedRun is what one interleaving produced.
type alignedRun struct {
	finals map[string]map[string]any // result key -> aggregates
	late   map[[2]int]bool           // (source, index)
	dirty  map[[2]int]bool
}

// runInterleaved delivers the sources' streams in one random
// interleaving, with marks (each source's progress so far) in random
// places, then a final mark of every source that purges everything.
func runInterleaved(t *rapid.T, s Spec, srcs [][]srcRec, label string) alignedRun {
	o, st := newOp(t, s)
	names := make([]string, len(srcs))
	for i := range srcs {
		names[i] = srcName(i)
	}
	o.SetSources(names)
	run := alignedRun{finals: map[string]map[string]any{}, late: map[[2]int]bool{}, dirty: map[[2]int]bool{}}
	collect := func(out Output) {
		for _, r := range out.Results {
			if !r.Final {
				continue
			}
			if _, dup := run.finals[r.Key]; dup {
				t.Fatalf("%s: two final results for %s", label, r.Key)
			}
			if s.Emit == EmitFinal && r.Revision != 1 {
				t.Fatalf("%s: final-only result %s has revision %d", label, r.Key, r.Revision)
			}
			run.finals[r.Key] = decodeValue(t, r)
		}
	}
	next := make([]int, len(srcs))
	progress := make([]int64, len(srcs))
	for i := range progress {
		progress[i] = math.MinInt64
	}
	for {
		var ready []int
		for i := range srcs {
			if next[i] < len(srcs[i]) {
				ready = append(ready, i)
			}
		}
		if len(ready) == 0 {
			break
		}
		i := rapid.SampledFrom(ready).Draw(t, label+"-src")
		r := srcs[i][next[i]]
		next[i]++
		progress[i] = max(progress[i], r.t)
		if r.here {
			out, err := o.ProcessAligned(srcName(i), r.key, r.t, r.vals, r.before)
			e := toExp(t, out, err)
			switch {
			case e.Dirty:
				run.dirty[[2]int{i, r.idx}] = true
			case out.Late != nil:
				run.late[[2]int{i, r.idx}] = true
			}
			collect(out)
		}
		if rapid.IntRange(0, 3).Draw(t, label+"-mark") == 0 {
			m := rapid.SampledFrom(ready).Draw(t, label+"-marked")
			if progress[m] != math.MinInt64 {
				out, err := o.Mark(srcName(m), progress[m])
				if err != nil {
					t.Fatalf("%s: mark: %v", label, err)
				}
				collect(out)
			}
		}
		checkStore(t, o, st)
	}
	for i := range srcs {
		out, err := o.Mark(srcName(i), MaxEventTime)
		if err != nil {
			t.Fatalf("%s: final mark: %v", label, err)
		}
		collect(out)
	}
	if o.OpenWindows() != 0 {
		t.Fatalf("%s: %d windows open after every source passed them", label, o.OpenWindows())
	}
	return run
}

// alignedOracle computes the finals and the late set from the sources'
// streams alone: a record is late when every window it belongs to ended
// grace before its own source's watermark; each window's final result
// aggregates the records that were not late for it.
func alignedOracle(s Spec, srcs [][]srcRec) alignedRun {
	or := newOracle(s)
	run := alignedRun{finals: map[string]map[string]any{}, late: map[[2]int]bool{}, dirty: map[[2]int]bool{}}
	members := map[string][]oRec{}
	var order []string
	n := 0
	for _, stream := range srcs {
		for _, r := range stream {
			if !r.here {
				continue
			}
			if !or.valid(r.vals) {
				run.dirty[[2]int{r.src, r.idx}] = true
				continue
			}
			judge := int64(math.MinInt64)
			if r.before != math.MinInt64 {
				judge = r.before - or.ooo
			}
			joined := false
			for k := (r.t-or.size)/or.adv - 2; k <= r.t/or.adv+2; k++ {
				start := k * or.adv
				if start > r.t || r.t >= start+or.size || start+or.size+or.grace <= judge {
					continue
				}
				key := OutputKey(r.key, start)
				if members[key] == nil {
					order = append(order, key)
				}
				members[key] = append(members[key], oRec{idx: n, key: r.key, t: r.t, vals: r.vals})
				joined = true
			}
			n++
			if !joined {
				run.late[[2]int{r.src, r.idx}] = true
			}
		}
	}
	for _, k := range order {
		run.finals[k] = or.aggregates(members[k])
	}
	return run
}

// TestAlignedInterleaving: records of several sources, each source in
// order, delivered in two random interleavings with marks in random
// places, give the same final results and the same late records as the
// brute force computed from the sources' streams alone. This is the
// determinism a restart relies on: which source's records a task happens
// to read first never changes a final result or the late set.
func TestAlignedInterleaving(t *testing.T) {
	var lateSeen, multiSeen int
	rapid.Check(t, func(t *rapid.T) {
		s := genAlignedSpec(t)
		srcs := genSources(t, s)
		want := alignedOracle(s, srcs)
		for _, label := range []string{"first", "second"} {
			got := runInterleaved(t, s, srcs, label)
			if !reflect.DeepEqual(got.late, want.late) {
				t.Fatalf("%s interleaving: late %v, want %v", label, got.late, want.late)
			}
			if !reflect.DeepEqual(got.dirty, want.dirty) {
				t.Fatalf("%s interleaving: dirty %v, want %v", label, got.dirty, want.dirty)
			}
			if !reflect.DeepEqual(got.finals, want.finals) {
				t.Fatalf("%s interleaving: finals\n got %v\nwant %v", label, got.finals, want.finals)
			}
		}
		if len(want.late) > 0 {
			lateSeen++
		}
		if len(srcs) > 1 {
			multiSeen++
		}
	})
	if lateSeen == 0 || multiSeen == 0 {
		t.Fatalf("the generator never made a late record (%d) or several sources (%d)", lateSeen, multiSeen)
	}
}

// TestAlignedHeldBySilentSource: a named source not heard from holds
// every window, and says so; its first mark releases them.
func TestAlignedHeldBySilentSource(t *testing.T) {
	o, _ := newOp(t, Spec{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{Name: "n", Kind: Count}}, Emit: EmitFinal})
	o.SetSources([]string{"in/0", "in/1"})
	out, err := o.ProcessAligned("in/0", "k", 5, []any{true}, math.MinInt64)
	if err != nil || len(out.Results) != 0 {
		t.Fatalf("first record: %+v %v", out, err)
	}
	if out, err = o.Mark("in/0", 100); err != nil || len(out.Results) != 0 {
		t.Fatalf("in/0 passed the window while in/1 is silent: %+v %v", out, err)
	}
	if src, m := o.HeldBy(); src != "in/1" || m != math.MinInt64 {
		t.Fatalf("held by %q at %d, want in/1 not heard from", src, m)
	}
	if o.Watermark() != math.MinInt64 {
		t.Fatalf("watermark %d while a source is silent", o.Watermark())
	}
	if out, err = o.Mark("in/1", 12); err != nil || len(out.Results) != 1 || !out.Results[0].Final || out.Results[0].Key != "k@0" {
		t.Fatalf("in/1's mark should purge k@0: %+v %v", out, err)
	}
	if o.Watermark() != 12 {
		t.Fatalf("watermark %d, want min(100, 12)", o.Watermark())
	}
	if src, m := o.HeldBy(); src != "in/1" || m != 12 {
		t.Fatalf("held by %q at %d, want in/1 at 12", src, m)
	}
	if _, err := o.Mark("in/1", MaxEventTime+1); err == nil {
		t.Fatal("a mark past MaxEventTime was accepted")
	}
}

// TestAlignedRestore: the sources' progress is state: a store restored
// from the changelog continues with the same minimum.
func TestAlignedRestore(t *testing.T) {
	spec := Spec{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{Name: "n", Kind: Count}}, Emit: EmitFinal}
	o, st := newOp(t, spec)
	o.SetSources([]string{"a", "b"})
	if _, err := o.ProcessAligned("a", "k", 5, []any{true}, math.MinInt64); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Mark("b", 8); err != nil {
		t.Fatal(err)
	}
	o2, err := New(spec, st)
	if err != nil {
		t.Fatal(err)
	}
	o2.SetSources([]string{"a", "b"})
	if got := o2.Sources(); !reflect.DeepEqual(got, map[string]int64{"a": 5, "b": 8}) {
		t.Fatalf("restored sources %v", got)
	}
	out, err := o2.Mark("a", 20)
	if err != nil || len(out.Results) != 0 {
		t.Fatalf("b (at 8) must still hold k@0: %+v %v", out, err)
	}
	if out, err = o2.Mark("b", 10); err != nil || len(out.Results) != 1 {
		t.Fatalf("b at 10 purges k@0: %+v %v", out, err)
	}
}

// TestAlignedIdle: an idle source is left out of the minimum; back in, it
// never lowers the watermark; with every source idle the minimum is over
// those that made progress.
func TestAlignedIdle(t *testing.T) {
	o, _ := newOp(t, Spec{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{Name: "n", Kind: Count}}, Emit: EmitFinal})
	o.SetSources([]string{"a", "b", "c"})
	if _, err := o.ProcessAligned("a", "k", 5, []any{true}, math.MinInt64); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Mark("a", 100); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Mark("c", 50); err != nil {
		t.Fatal(err)
	}
	out, err := o.SetIdle("b", true)
	if err != nil || len(out.Results) != 1 || out.Results[0].Key != "k@0" || o.Watermark() != 50 {
		t.Fatalf("b idle: want k@0 purged at min(a 100, c 50): %+v %v wm %d", out, err, o.Watermark())
	}
	if out, err = o.SetIdle("b", false); err != nil || len(out.Results) != 0 || o.Watermark() != 50 {
		t.Fatalf("b back: %+v %v wm %d", out, err, o.Watermark())
	}
	if src, m := o.HeldBy(); src != "b" || m != math.MinInt64 {
		t.Fatalf("held by %q at %d, want b (back, not heard from)", src, m)
	}
	for _, s := range []string{"a", "b", "c"} {
		if _, err := o.SetIdle(s, true); err != nil {
			t.Fatal(err)
		}
	}
	if src, m := o.HeldBy(); src != "c" || m != 50 || o.Watermark() != 50 {
		t.Fatalf("all idle: held by %q at %d, wm %d; want c at 50", src, m, o.Watermark())
	}
	if _, err := o.SetIdle("c", false); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Mark("c", 80); err != nil || o.Watermark() != 80 {
		t.Fatalf("c alone not idle at 80: wm %d %v", o.Watermark(), err)
	}
}
