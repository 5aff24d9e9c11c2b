package window

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
)

func traced(t *testing.T, o *Operator, tc string, key string, et int64) Output {
	t.Helper()
	if tc != "" {
		o.NextTrace([]byte(tc))
	}
	out, err := o.Process(key, et, []any{1})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tracesOf(rs []Result) map[string][]string {
	m := map[string][]string{}
	for _, r := range rs {
		var s []string
		for _, tc := range r.Traces {
			s = append(s, string(tc))
		}
		m[r.Key] = s
	}
	return m
}

// TestWindowKeepsFirstTraces: a window keeps the contexts of its first
// Spec.Traces records that carried one, through a rebuild from its
// store, and its result hands them out in arrival order.
func TestWindowKeepsFirstTraces(t *testing.T) {
	spec := Spec{Kind: Tumbling, Size: time.Minute, Emit: EmitFinal, Traces: 2,
		Aggregations: []Aggregation{{Name: "n", Kind: Count}}}
	o, st := newOp(t, spec)
	traced(t, o, "", "k", 1000) // no context
	traced(t, o, "a", "k", 2000)
	traced(t, o, "b", "k", 3000)
	// Rebuilt from the store: the contexts are state.
	o, err := New(spec, st)
	if err != nil {
		t.Fatal(err)
	}
	traced(t, o, "c", "k", 4000) // over the cap of 2
	out, err := o.AdvanceWatermark(120_000)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tracesOf(out.Results), map[string][]string{"k@0": {"a", "b"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("traces %v, want %v", got, want)
	}
}

// TestWindowTracesOldState: a window stored without contexts (before
// they were kept, or under Traces: 0) reads under a spec that keeps
// them, and takes contexts from then on; the fingerprint ignores Traces.
func TestWindowTracesOldState(t *testing.T) {
	spec := Spec{Kind: Tumbling, Size: time.Minute, Emit: EmitFinal, Aggregations: []Aggregation{{Name: "n", Kind: Count}}}
	o, st := newOp(t, spec)
	traced(t, o, "ignored", "k", 1000)
	var stored []byte
	_ = st.Range(windowPrefix, func(_, v []byte) bool { stored = append([]byte(nil), v...); return true })
	if want := appendWindow(nil, &win{start: 0, end: 60000, aggs: []aggState{{n: 1}}}, spec.Aggregations); string(stored) != string(want) {
		t.Fatalf("Traces 0 stored %x, want the old layout %x", stored, want)
	}
	spec.Traces = 4
	o, err := New(spec, st)
	if err != nil {
		t.Fatalf("old state under a spec keeping traces: %v", err)
	}
	traced(t, o, "a", "k", 2000)
	out, err := o.AdvanceWatermark(120_000)
	if err != nil {
		t.Fatal(err)
	}
	if got := tracesOf(out.Results)["k@0"]; !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("traces %v", got)
	}
}

func TestWindowTracesCorrupt(t *testing.T) {
	aggs := []Aggregation{{Name: "n", Kind: Count}}
	good := appendWindow(nil, &win{start: 0, end: 10, aggs: []aggState{{n: 1}}, ntr: 1, tr: []byte{1, 'a'}}, aggs)
	if _, err := decodeWindow(good, "k", 0, aggs); err != nil {
		t.Fatal(err)
	}
	base := appendWindow(nil, &win{start: 0, end: 10, aggs: []aggState{{n: 1}}}, aggs)
	for name, tail := range map[string][]byte{
		"unknown tag":   {2, 1, 1, 'a'},
		"no count":      {tracesTag},
		"zero count":    {tracesTag, 0},
		"short":         {tracesTag, 2, 1, 'a'},
		"empty context": {tracesTag, 1, 0},
		"too long":      append([]byte{tracesTag, 1, MaxTraceLen + 1}, make([]byte, MaxTraceLen+1)...),
		"trailing":      {tracesTag, 1, 1, 'a', 0},
	} {
		b := append(append([]byte(nil), base...), tail...)
		if _, err := decodeWindow(b, "k", 0, aggs); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: err %v, want corrupt", name, err)
		}
	}
}

// TestSessionMergeTraces: a merged session keeps the contexts of the
// sessions it merged in start order, then the merging record's.
func TestSessionMergeTraces(t *testing.T) {
	spec := Spec{Kind: Session, Gap: 5 * time.Second, Emit: EmitFinal, Traces: 3, MaxOutOfOrderness: time.Minute,
		Aggregations: []Aggregation{{Name: "n", Kind: Count}}}
	o, _ := newOp(t, spec)
	traced(t, o, "a", "k", 0)
	traced(t, o, "b", "k", 8000)
	traced(t, o, "c", "k", 4000) // touches both
	traced(t, o, "d", "k", 6000)
	out, err := o.AdvanceWatermark(60_000)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tracesOf(out.Results), map[string][]string{"k@0": {"a", "b", "c"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("traces %v, want %v", got, want)
	}
}

// TestWindowTracesOracle: for random tumbling and hopping streams, each
// final result's contexts are the first Traces contexts of the records
// applied to its window (late ones are not), in arrival order.
func TestWindowTracesOracle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		kind := rapid.SampledFrom([]Kind{Tumbling, Hopping}).Draw(rt, "kind")
		spec := Spec{Kind: kind, Size: 10 * time.Second, Emit: EmitFinal,
			Traces:       rapid.IntRange(0, 4).Draw(rt, "traces"),
			Aggregations: []Aggregation{{Name: "n", Kind: Count}}}
		if kind == Hopping {
			spec.Advance = 5 * time.Second
		}
		st := changelog.NewMemory()
		o, err := New(spec, st)
		if err != nil {
			rt.Fatal(err)
		}
		want := map[string][]string{}
		n := rapid.IntRange(1, 60).Draw(rt, "n")
		for i := range n {
			key := rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "key")
			et := rapid.Int64Range(0, 60_000).Draw(rt, "et")
			tc := ""
			if rapid.Bool().Draw(rt, "traced") {
				tc = fmt.Sprintf("tc%d", i)
				o.NextTrace([]byte(tc))
			}
			before := o.Watermark()
			out, err := o.Process(key, et, []any{1})
			if err != nil {
				rt.Fatal(err)
			}
			if out.Late != nil {
				continue
			}
			size, adv := int64(10_000), int64(10_000)
			if kind == Hopping {
				adv = 5000
			}
			for s := et - et%adv; s > et-size; s -= adv {
				k := OutputKey(key, s)
				if s+size <= before {
					continue // purged: the record skips it
				}
				if _, ok := want[k]; !ok {
					want[k] = nil
				}
				if tc != "" && len(want[k]) < spec.Traces {
					want[k] = append(want[k], tc)
				}
			}
			for k, v := range tracesOf(out.Results) {
				if !reflect.DeepEqual(v, want[k]) {
					rt.Fatalf("window %s: traces %v, want %v", k, v, want[k])
				}
				delete(want, k)
			}
		}
		out, err := o.AdvanceWatermark(1 << 40)
		if err != nil {
			rt.Fatal(err)
		}
		for k, v := range tracesOf(out.Results) {
			if !reflect.DeepEqual(v, want[k]) {
				rt.Fatalf("window %s: traces %v, want %v", k, v, want[k])
			}
		}
	})
}
