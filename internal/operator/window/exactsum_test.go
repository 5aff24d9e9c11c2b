package window

import (
	"math"
	"math/big"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestExactSum: any multiset of finite floats, added in any two orders,
// gives the same sum, and that sum is the exact one rounded to nearest
// even (big.Float at a precision that holds every float64 sum exactly).
func TestExactSum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.OneOf(
			rapid.Float64Range(-1e3, 1e3),
			rapid.SampledFrom([]float64{0.1, 0.2, 0.3, 1e16, -1e16, 1e300, -1e300, 5e-324, math.SmallestNonzeroFloat64 * 3, 1 << 53, 1}),
			rapid.Float64Range(-1e200, 1e200),
		), 1, 40).Draw(t, "xs")
		perm := rapid.Permutation(xs).Draw(t, "perm")
		var a, b aggState
		for i := range xs {
			if !a.addNum(value{k: vFloat, f: xs[i]}) || !b.addNum(value{k: vFloat, f: perm[i]}) {
				t.Fatalf("a finite sum was refused")
			}
		}
		exact := new(big.Float).SetPrec(2200)
		for _, x := range xs {
			exact.Add(exact, new(big.Float).SetFloat64(x))
		}
		want, _ := exact.Float64()
		if ga, gb := a.sum().f, b.sum().f; ga != want || gb != want {
			t.Fatalf("sum %v in one order, %v in another, exact %v", ga, gb, want)
		}
		// Stored and read back, the state gives the same sum.
		w := &win{end: 10, aggs: []aggState{a}}
		got, err := decodeWindow(appendWindow(nil, w, []Aggregation{{Name: "s", Kind: Sum}}), "k", 0, []Aggregation{{Name: "s", Kind: Sum}})
		if err != nil || got.aggs[0].sum().f != want || !slices.Equal(got.aggs[0].fp, a.fp) {
			t.Fatalf("decoded %v (%v), want %v", got, err, want)
		}
	})
}

func TestExactSumIntegersAndOverflow(t *testing.T) {
	var st aggState
	for _, v := range []value{{k: vInt, i: 1}, {k: vFloat, f: 0.1}, {k: vInt, i: 2}, {k: vFloat, f: 0.2}} {
		if !st.addNum(v) {
			t.Fatal("refused")
		}
	}
	if st.num.k != vInt || st.num.i != 3 || len(st.fp) == 0 {
		t.Fatalf("integer part %+v, float partials %v", st.num, st.fp)
	}
	if got := st.sum().f; got != 3.3 { // 3 + 0.1 + 0.2 exactly is 3.3000000000000000166, nearest 3.3
		t.Fatalf("sum %v, want 3.3", got)
	}
	var big aggState
	if !big.addNum(value{k: vFloat, f: math.MaxFloat64}) || big.addNum(value{k: vFloat, f: math.MaxFloat64}) {
		t.Fatal("a sum past MaxFloat64 was accepted")
	}
}

// TestSumStoredBeforeExact: a sum stored as one float (before sums were
// exact) is read as that float and goes on exactly from there.
func TestSumStoredBeforeExact(t *testing.T) {
	aggs := []Aggregation{{Name: "s", Kind: Sum}}
	old := appendValue([]byte{10, 0}, value{k: vFloat, f: 0.5}) // end-start 10, rev 0, the sum
	w, err := decodeWindow(old, "k", 0, aggs)
	if err != nil || w.aggs[0].sum().f != 0.5 {
		t.Fatalf("decoded %+v, %v", w, err)
	}
	for _, bad := range [][]byte{
		{10, 0, byte(vExact), byte(vNone), 0},                                             // no partials
		{10, 0, byte(vExact), byte(vString), 1, 'x', 1, 0, 0, 0, 0, 0, 0, 0, 0},           // a string integer part
		{10, 0, byte(vExact), byte(vNone), 2, 0, 0, 0, 0, 0, 0, 0, 0},                     // short
		append([]byte{10, 0, byte(vExact), byte(vNone), 1}, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f), // +Inf
		{10, 0, byte(vString), 1, 'x'},                                                    // a string sum
	} {
		if _, err := decodeWindow(bad, "k", 0, aggs); err == nil {
			t.Errorf("decoded corrupt sum %v", bad)
		}
	}
}

// FuzzDecodeWindow: stored window state read from a changelog is
// untrusted bytes: decoding never panics, and what decodes re-encodes to
// a value that decodes to the same results.
func FuzzDecodeWindow(f *testing.F) {
	aggs := []Aggregation{{"c", Count}, {"s", Sum}, {"mn", Min}, {"mx", Max}, {"a", Avg}, {"f", First}, {"l", Last}, {"d", DistinctCount}}
	w := &win{end: 10, rev: 2, aggs: make([]aggState, len(aggs))}
	for i, a := range aggs {
		w.aggs[i].apply(a.Kind, value{k: vFloat, f: 0.1}, 5)
		w.aggs[i].apply(a.Kind, value{k: vInt, i: 3}, 6)
	}
	f.Add(appendWindow(nil, w, aggs))
	f.Add([]byte{10, 0})
	// reused is a window decoded into before (processFixed's): decoding
	// into it gives what decoding afresh gives, whatever it held.
	reused := &win{}
	reused.reset("old", 0, 10, len(aggs))
	for i, a := range aggs {
		reused.aggs[i].apply(a.Kind, value{k: vFloat, f: 0.3}, 1)
		reused.aggs[i].apply(a.Kind, value{k: vString, s: "x"}, 2)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeWindow(b, "k", 0, aggs)
		errInto := decodeWindowInto(reused, b, "k", 0, aggs)
		if (err == nil) != (errInto == nil) {
			t.Fatalf("decodeWindow: %v, into a used window: %v", err, errInto)
		}
		if err != nil {
			return // what it left in reused, the next decode resets
		}
		if x, y := appendWindow(nil, w, aggs), appendWindow(nil, reused, aggs); string(x) != string(y) ||
			reused.key != w.key || reused.start != w.start || reused.end != w.end || reused.rev != w.rev {
			t.Fatalf("decoded into a used window: %x, afresh %x", y, x)
		}
		again, err := decodeWindow(appendWindow(nil, w, aggs), "k", 0, aggs)
		if err != nil {
			t.Fatalf("re-encoded state does not decode: %v", err)
		}
		for i, a := range aggs {
			x := string(w.aggs[i].appendResult(nil, a.Kind))
			y := string(again.aggs[i].appendResult(nil, a.Kind))
			if x != y {
				t.Fatalf("%s: %s, after a round trip %s", a.Name, x, y)
			}
		}
	})
}
