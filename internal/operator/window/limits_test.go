package window

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

// genLimited draws a spec with limits small enough to be hit often.
func genLimited(t *rapid.T) Spec {
	s := genSpec(t)
	per := 1
	if s.Kind == Hopping {
		per = int((s.Size + s.Advance - 1) / s.Advance)
	}
	s.Limits.Policy = rapid.SampledFrom([]statelimit.Policy{statelimit.Route, statelimit.Evict}).Draw(t, "policy")
	if rapid.IntRange(0, 3).Draw(t, "entries?") > 0 {
		s.Limits.MaxEntries = rapid.IntRange(per, per+6).Draw(t, "max_entries")
	}
	if s.Limits.MaxEntries == 0 || rapid.Bool().Draw(t, "bytes?") {
		s.Limits.MaxBytes = rapid.Int64Range(40, 400).Draw(t, "max_bytes")
	}
	return s
}

// newWindows is how many windows a record (key, t) would open now: its
// windows that are neither stored nor purged (fixed), or 1 when no
// session of key overlaps or touches [t, t+gap] (sessions).
func newWindows(t tb, o *Operator, key string, tm int64) int {
	t.Helper()
	held, err := o.WindowsOf(key)
	if err != nil {
		t.Fatal(err)
	}
	if o.p.kind == Session {
		for _, w := range held {
			if w.End >= tm && w.Start <= tm+o.p.gap {
				return 0
			}
		}
		return 1
	}
	n := 0
	last := floorDiv(tm, o.p.advance) * o.p.advance
	first := -floorDiv(-(tm-o.p.size+1), o.p.advance) * o.p.advance
	for s := first; s <= last; s += o.p.advance {
		if s+o.p.size+o.p.grace <= o.wm {
			continue
		}
		if !slices.ContainsFunc(held, func(r Result) bool { return r.Start == s }) {
			n++
		}
	}
	return n
}

// timerOrder lists the stored windows in timer order: the eviction order.
func timerOrder(t tb, st *changelog.Memory) []string {
	t.Helper()
	var ids []string
	if err := st.Range(timerPrefix, func(k, _ []byte) bool {
		tm, err := parseTimerKey(k)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, OutputKey(tm.key, tm.start))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestLimitsProperty: for random specs, limits and streams, every record
// is exactly one of dirty, late, overflow or applied; a record is refused
// (route) or evicts (evict) exactly when the windows it opens would pass a
// limit, judged from the state before it; evict purges the windows that
// would close first, never one the record updates; open windows never
// pass max_entries; StateBytes matches the store after every call.
func TestLimitsProperty(t *testing.T) {
	seen := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		s := genLimited(rt)
		ops := genOps(rt, s, 150)
		o, st := newOp(rt, s)
		lim := s.Limits
		for i, p := range ops {
			if p.advance {
				if _, err := call(o, p); err != nil {
					rt.Fatal(err)
				}
				checkStore(rt, o, st)
				continue
			}
			add := newWindows(rt, o, p.key, p.t)
			open, size := o.OpenWindows(), o.StateBytes()
			order := timerOrder(rt, st)
			held, _ := o.WindowsOf(p.key)
			out, err := call(o, p)
			checkStore(rt, o, st)
			kinds := 0
			if err != nil {
				kinds++
				seen["dirty"]++
			}
			if out.Late != nil {
				kinds++
				seen["late"]++
			}
			if out.Overflow != nil {
				kinds++
				seen["overflow"]++
				if lim.Policy != statelimit.Route || add == 0 {
					rt.Fatalf("op %d %v: overflow under %v with %d new windows", i, p, lim.Policy, add)
				}
				if byEntries := lim.MaxEntries > 0 && open+add > lim.MaxEntries; byEntries != (out.Overflow.Limit == statelimit.LimitEntries) {
					rt.Fatalf("op %d %v: overflow %+v with %d open + %d new, limits %+v", i, p, out.Overflow, open, add, lim)
				}
				if out.Overflow.Limit == statelimit.LimitEntries && out.Overflow.Size != int64(open) || out.Overflow.Limit == statelimit.LimitBytes && out.Overflow.Size != size {
					rt.Fatalf("op %d: overflow size %+v, state had %d windows, %d bytes", i, out.Overflow, open, size)
				}
			}
			if kinds > 1 {
				rt.Fatalf("op %d %v: %d outcomes", i, p, kinds)
			}
			if kinds == 0 {
				seen["applied"]++
			}
			// Entries: the one exact bound (bytes may grow inside windows).
			if lim.MaxEntries > 0 && o.OpenWindows() > max(open, lim.MaxEntries) {
				rt.Fatalf("op %d %v: %d open windows, limit %d (was %d)", i, p, o.OpenWindows(), lim.MaxEntries, open)
			}
			if kinds == 0 && lim.Policy == statelimit.Route && lim.MaxEntries > 0 && add > 0 && open+add > lim.MaxEntries {
				rt.Fatalf("op %d %v: admitted %d new windows over %d open, limit %d", i, p, add, open, lim.MaxEntries)
			}
			var evicted []string
			for _, r := range out.Results {
				if r.Evicted {
					if !r.Final || !bytes.Contains(r.Value, []byte(`"evicted":true`)) {
						rt.Fatalf("op %d: evicted result %+v %s", i, r, r.Value)
					}
					evicted = append(evicted, r.Key)
				}
			}
			if len(evicted) != out.Evicted || (lim.Policy != statelimit.Evict && out.Evicted > 0) {
				rt.Fatalf("op %d: %d evicted results, Evicted %d, policy %v", i, len(evicted), out.Evicted, lim.Policy)
			}
			if out.Evicted > 0 {
				seen["evicted"] += out.Evicted
				if lim.MaxEntries > 0 && open+add-out.Evicted > lim.MaxEntries && len(evicted) < len(order)-len(held) {
					rt.Fatalf("op %d: evicted %d of %d open for %d new, limit %d", i, out.Evicted, open, add, lim.MaxEntries)
				}
				// The first windows in timer order, skipping those the record updates.
				var want []string
				for _, id := range order {
					if len(want) == len(evicted) {
						break
					}
					if !slices.ContainsFunc(held, func(r Result) bool { return r.Key == id && isTarget(o, p.t, r) }) {
						want = append(want, id)
					}
				}
				slices.Sort(want)
				slices.Sort(evicted)
				if !reflect.DeepEqual(want, evicted) {
					rt.Fatalf("op %d %v: evicted %v, want the oldest %v (timer order %v)", i, p, evicted, want, order)
				}
			}
		}
	})
	t.Logf("exercised: %v", seen)
	for _, k := range []string{"overflow", "evicted", "applied", "late"} {
		if seen[k] == 0 {
			t.Errorf("the generator never produced %s", k)
		}
	}
}

// isTarget reports whether the held window r is one the record at tm
// updates (a fixed window containing tm, or a session it touches).
func isTarget(o *Operator, tm int64, r Result) bool {
	if o.p.kind == Session {
		return r.End >= tm && r.Start <= tm+o.p.gap
	}
	return r.Start <= tm && tm < r.End
}

// TestLimitsDeterministic: the same stream twice gives the same outputs,
// and so does a run that restarts from a copy of the store (the changelog)
// at a random point: limit decisions depend on the state alone.
func TestLimitsDeterministic(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := genLimited(rt)
		ops := genOps(rt, s, 150)
		cut := rapid.IntRange(0, len(ops)).Draw(rt, "cut")
		a, _ := newOp(rt, s)
		b, stb := newOp(rt, s)
		for i, p := range ops {
			if i == cut { // restart b from its changelog
				cp := changelog.NewMemory()
				if err := stb.Range(nil, func(k, v []byte) bool { return cp.Restore(k, v) == nil }); err != nil {
					rt.Fatal(err)
				}
				var err error
				if b, err = New(s, cp); err != nil {
					rt.Fatal(err)
				}
				stb = cp
			}
			oa, ea := call(a, p)
			ob, eb := call(b, p)
			if fmt.Sprint(ea) != fmt.Sprint(eb) || !reflect.DeepEqual(oa, ob) {
				rt.Fatalf("op %d %v (restart at %d): outputs differ\n%+v %v\n%+v %v", i, p, cut, oa, ea, ob, eb)
			}
			if a.StateBytes() != b.StateBytes() || a.OpenWindows() != b.OpenWindows() {
				rt.Fatalf("op %d: state %d/%d vs %d/%d", i, a.OpenWindows(), a.StateBytes(), b.OpenWindows(), b.StateBytes())
			}
		}
	})
}

// TestLimitsRestoredOverLimit: a task restored with more windows than a
// (lowered) max_entries refuses every new window under route until purges
// bring it under, and under evict brings it back to the limit with the
// next new window.
func TestLimitsRestoredOverLimit(t *testing.T) {
	s := Spec{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{"n", Count}}}
	_, st := newOp(t, s)
	o, _ := New(s, st)
	for i := range 5 {
		if _, err := o.Process(fmt.Sprint("k", i), 5, []any{true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pol := range []statelimit.Policy{statelimit.Route, statelimit.Evict} {
		cp := changelog.NewMemory()
		_ = st.Range(nil, func(k, v []byte) bool { return cp.Restore(k, v) == nil })
		ls := s
		ls.Limits = statelimit.Limits{MaxEntries: 2, Policy: pol}
		lo, err := New(ls, cp)
		if err != nil {
			t.Fatal(err)
		}
		out, err := lo.Process("new", 6, []any{true})
		if err != nil {
			t.Fatal(err)
		}
		switch pol {
		case statelimit.Route:
			if out.Overflow == nil || out.Overflow.Size != 5 || lo.OpenWindows() != 5 {
				t.Fatalf("route: %+v, %d open", out, lo.OpenWindows())
			}
			// An existing window still updates.
			if out, _ := lo.Process("k1", 7, []any{true}); out.Overflow != nil {
				t.Fatalf("update of an existing window refused: %+v", out.Overflow)
			}
		case statelimit.Evict:
			if out.Evicted != 4 || lo.OpenWindows() != 2 {
				t.Fatalf("evict: %d evicted, %d open", out.Evicted, lo.OpenWindows())
			}
			for i, r := range out.Results {
				if want := OutputKey(fmt.Sprint("k", i), 0); r.Key != want || !r.Evicted {
					t.Fatalf("evicted %d: %+v, want %s", i, r, want)
				}
			}
		}
	}
}

func TestLimitsValidation(t *testing.T) {
	base := Spec{Kind: Hopping, Size: msd(10), Advance: msd(2), Aggregations: []Aggregation{{"n", Count}}}
	for _, tc := range []struct {
		l  statelimit.Limits
		ok bool
	}{
		{statelimit.Limits{}, true},
		{statelimit.Limits{MaxEntries: 5, Policy: statelimit.Route}, true},
		{statelimit.Limits{MaxEntries: 4, Policy: statelimit.Evict}, false}, // a record opens 5
		{statelimit.Limits{MaxBytes: 100, Policy: statelimit.Evict}, true},
		{statelimit.Limits{Policy: statelimit.Route}, false},
		{statelimit.Limits{MaxEntries: -1, Policy: statelimit.Route}, false},
		{statelimit.Limits{MaxEntries: 5, Policy: 9}, false},
	} {
		s := base
		s.Limits = tc.l
		if err := s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.l, err)
		}
	}
}

// TestLimitsPebbleMatchesMemory: the same limited stream over the Pebble
// store (which seeks timers from the watermark) and the memory store
// gives the same outputs and the same byte estimate.
func TestLimitsPebbleMatchesMemory(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := genLimited(rt)
		ops := genOps(rt, s, 100)
		m, _ := newOp(rt, s)
		pst, err := changelog.OpenPebbleInMemory()
		if err != nil {
			rt.Fatal(err)
		}
		defer pst.Close()
		p, err := New(s, pst)
		if err != nil {
			rt.Fatal(err)
		}
		for i, o := range ops {
			om, em := call(m, o)
			op, ep := call(p, o)
			if fmt.Sprint(em) != fmt.Sprint(ep) || !reflect.DeepEqual(om, op) {
				rt.Fatalf("op %d %v: memory %+v %v, pebble %+v %v", i, o, om, em, op, ep)
			}
			if m.StateBytes() != p.StateBytes() || m.OpenWindows() != p.OpenWindows() {
				rt.Fatalf("op %d: memory %d/%d, pebble %d/%d", i, m.OpenWindows(), m.StateBytes(), p.OpenWindows(), p.StateBytes())
			}
		}
	})
}
