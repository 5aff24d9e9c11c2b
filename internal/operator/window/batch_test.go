package window

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
)

// storeView is everything a store shows: its entries, its changes since
// the last reset, its length and its size.
type storeView struct {
	entries, changes [][2]string
	n                int
	size             int64
}

func storeState(t tb, st *changelog.Memory) storeView {
	t.Helper()
	var d storeView
	if err := st.Range(nil, func(k, v []byte) bool {
		d.entries = append(d.entries, [2]string{string(k), string(v)})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Changes() {
		v := "<tombstone>"
		if !c.Tombstone() {
			v = string(c.Value)
		}
		d.changes = append(d.changes, [2]string{string(c.Key), v})
	}
	d.n, d.size = st.Len(), st.SizeBytes()
	return d
}

// batchStep is one call on both operators, or a batch boundary.
type batchStep struct {
	kind    int // 0 aligned record, 1 plain record, 2 mark, 3 idle, 4 advance, 5 begin, 6 flush, 7 commit
	src     int
	key     string
	t       int64
	srcMax  int64
	vals    []any
	idle    bool
	advance int64
}

func (s batchStep) call(o *Operator) (Output, error) {
	src := srcName(s.src)
	switch s.kind {
	case 0:
		return o.ProcessAligned(src, s.key, s.t, s.vals, s.srcMax)
	case 1:
		return o.Process(s.key, s.t, s.vals)
	case 2:
		return o.Mark(src, s.t)
	case 3:
		return o.SetIdle(src, s.idle)
	case 4:
		return o.AdvanceWatermark(s.advance)
	}
	return Output{}, fmt.Errorf("step kind %d is no call", s.kind)
}

// genBatchSteps draws records of several sources (in order, jittered,
// far late, the source maximum each had before), plain records, marks
// (some out of range), idle changes, idle advances, and batch
// boundaries, with commits between batches.
func genBatchSteps(t *rapid.T, s Spec) []batchStep {
	nsrc := rapid.IntRange(1, 4).Draw(t, "nsrc")
	keys := []string{"a", "b", "c"}[:rapid.IntRange(1, 3).Draw(t, "nkeys")]
	clock := make([]int64, nsrc)
	before := make([]int64, nsrc)
	for i := range before {
		clock[i] = rapid.Int64Range(-60, 60).Draw(t, "clock0")
		before[i] = math.MinInt64
	}
	var out []batchStep
	inBatch := false
	for range rapid.IntRange(0, 120).Draw(t, "nsteps") {
		st := batchStep{src: rapid.IntRange(0, nsrc-1).Draw(t, "src")}
		k := rapid.IntRange(0, 99).Draw(t, "step")
		switch {
		case k < 60:
			st.kind = 0
			if k >= 50 {
				st.kind = 1
			}
			switch j := rapid.IntRange(0, 9).Draw(t, "time"); {
			case j == 0:
				st.t = clock[st.src] - rapid.Int64Range(1, 200).Draw(t, "late")
			case j == 1:
				st.t = MaxEventTime + 1 // rejected
			default:
				clock[st.src] += rapid.Int64Range(0, 8).Draw(t, "tick")
				st.t = clock[st.src]
			}
			st.key = rapid.SampledFrom(keys).Draw(t, "key")
			st.srcMax = before[st.src]
			st.vals = make([]any, len(s.Aggregations))
			for a, ag := range s.Aggregations {
				st.vals[a] = genValue(t, ag.Kind)
			}
			if st.t <= MaxEventTime && st.kind == 0 {
				before[st.src] = max(before[st.src], st.t)
			}
		case k < 68:
			st.kind = 2
			st.t = clock[st.src] + rapid.Int64Range(-20, 20).Draw(t, "mark")
			if rapid.IntRange(0, 9).Draw(t, "badmark") == 0 {
				st.t = MinEventTime - 1
			}
		case k < 74:
			st.kind, st.idle = 3, rapid.Bool().Draw(t, "idle")
		case k < 78:
			st.kind = 4
			st.advance = clock[st.src] + rapid.Int64Range(-30, 60).Draw(t, "to")
		case !inBatch:
			st.kind, inBatch = 5, true
		default:
			st.kind, inBatch = 6, false
			out = append(out, st)
			if rapid.Bool().Draw(t, "commit") {
				out = append(out, batchStep{kind: 7})
			}
			continue
		}
		out = append(out, st)
	}
	if inBatch {
		out = append(out, batchStep{kind: 6})
	}
	return out
}

// TestBatchMatchesPerRecord: an operator that defers the watermark and
// source writes (BeginBatch ... Flush) returns the same outputs as one
// that writes them per record, and at every flush (and between batches)
// leaves its store, the store's changes, length and size identical; an
// operator rebuilt from its store after the run continues the same.
func TestBatchMatchesPerRecord(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s Spec
		switch rapid.IntRange(0, 2).Draw(t, "specs") {
		case 0:
			s = genAlignedSpec(t)
		case 1:
			s = genSpec(t)
		default:
			s = genLimited(t)
		}
		steps := genBatchSteps(t, s)
		ref, refSt := newOp(t, s)
		bat, batSt := newOp(t, s)
		names := []string{srcName(0), srcName(1)}
		ref.SetSources(names)
		bat.SetSources(names)
		inBatch := false
		for i, st := range steps {
			switch st.kind {
			case 5:
				bat.BeginBatch()
				inBatch = true
				continue
			case 6:
				if err := bat.Flush(); err != nil {
					t.Fatal(err)
				}
				inBatch = false
			case 7:
				refSt.ResetChanges()
				batSt.ResetChanges()
			default:
				want, werr := st.call(ref)
				got, gerr := st.call(bat)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
					t.Fatalf("step %d %+v: batched %+v, %v; per record %+v, %v", i, st, got, gerr, want, werr)
				}
				if ref.Watermark() != bat.Watermark() || !reflect.DeepEqual(ref.Sources(), bat.Sources()) {
					t.Fatalf("step %d: watermark or sources differ", i)
				}
			}
			if inBatch {
				continue
			}
			if w, g := storeState(t, refSt), storeState(t, batSt); !reflect.DeepEqual(w, g) {
				t.Fatalf("after step %d %+v: batched store\n%+v\nper-record store\n%+v", i, st, g, w)
			}
		}
		// What the changelog holds rebuilds the same operator.
		re, err := New(s, batSt)
		if err != nil {
			t.Fatal(err)
		}
		if re.Watermark() != ref.Watermark() || !reflect.DeepEqual(re.Sources(), ref.Sources()) || re.OpenWindows() != ref.OpenWindows() {
			t.Fatalf("rebuilt: watermark %d sources %v open %d; want %d %v %d",
				re.Watermark(), re.Sources(), re.OpenWindows(), ref.Watermark(), ref.Sources(), ref.OpenWindows())
		}
	})
}

// TestBatchDefersOnlyMetaAndSources: inside a batch the window and timer
// writes reach the store at once, the watermark and source progress only
// at Flush, each once.
func TestBatchDefersOnlyMetaAndSources(t *testing.T) {
	s := Spec{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{Name: "n", Kind: Count}}}
	o, st := newOp(t, s)
	o.BeginBatch()
	for i := range int64(5) {
		before := int64(math.MinInt64)
		if i > 0 {
			before = i - 1
		}
		if _, err := o.ProcessAligned("in/0", "k", i, []any{1}, before); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := st.Get(metaKey); ok {
		t.Fatal("watermark written before Flush")
	}
	if _, ok, _ := st.Get(appendSourceKey(nil, "in/0")); ok {
		t.Fatal("source progress written before Flush")
	}
	if _, ok, _ := st.Get(appendWindowKey(nil, "k", 0)); !ok {
		t.Fatal("window not written at once")
	}
	if err := o.Flush(); err != nil {
		t.Fatal(err)
	}
	re, err := New(s, st)
	if err != nil {
		t.Fatal(err)
	}
	if re.Watermark() != 4 || re.Sources()["in/0"] != 4 {
		t.Fatalf("after Flush: watermark %d, sources %v", re.Watermark(), re.Sources())
	}
	// Out of a batch, writes go through at once again.
	if _, err := o.AdvanceWatermark(6); err != nil {
		t.Fatal(err)
	}
	if re, _ = New(s, st); re.Watermark() != 6 {
		t.Fatalf("watermark after Flush not written at once: %d", re.Watermark())
	}
	// DropBatch forgets what it deferred and ends the batch.
	o.BeginBatch()
	if _, err := o.Mark("in/0", 20); err != nil {
		t.Fatal(err)
	}
	st.ResetChanges()
	o.DropBatch()
	if c := st.Changes(); len(c) != 0 {
		t.Fatalf("DropBatch wrote %d changes", len(c))
	}
	if err := o.Flush(); err != nil || len(st.Changes()) != 0 {
		t.Fatalf("Flush after DropBatch: %v, %d changes", err, len(st.Changes()))
	}
	if _, err := o.Mark("in/0", 30); err != nil {
		t.Fatal(err)
	}
	if re, _ = New(s, st); re.Sources()["in/0"] != 30 {
		t.Fatalf("after DropBatch, a mark is not written at once: %v", re.Sources())
	}
}
