package window

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/operator/opkey"
)

var _ Store = changelog.Store(nil) // the changelog stores satisfy what the operator needs

// tb is what the helpers need from *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// TestMain makes the property tests run 1,000 cases by default (the
// issue's bar) unless -rapid.checks is given.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		_ = flag.Set("rapid.checks", "1000")
	}
	os.Exit(m.Run())
}

func msd(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

var aggKinds = []AggKind{Count, Sum, Min, Max, Avg, First, Last, DistinctCount}

// genSpec draws a random window spec with small sizes, so that windows,
// grace and out-of-orderness interact within short streams.
func genSpec(t *rapid.T) Spec {
	s := Spec{
		Kind:              rapid.SampledFrom([]Kind{Tumbling, Hopping, Session}).Draw(t, "kind"),
		MaxOutOfOrderness: msd(rapid.Int64Range(0, 20).Draw(t, "ooo")),
		Grace:             msd(rapid.Int64Range(0, 40).Draw(t, "grace")),
		Emit:              rapid.SampledFrom([]EmitMode{EmitUpdate, EmitFinal}).Draw(t, "emit"),
	}
	switch s.Kind {
	case Tumbling:
		s.Size = msd(rapid.Int64Range(1, 30).Draw(t, "size"))
	case Hopping:
		size := rapid.Int64Range(1, 30).Draw(t, "size")
		s.Size = msd(size)
		s.Advance = msd(rapid.Int64Range(max(1, size/6), size).Draw(t, "advance"))
	case Session:
		s.Gap = msd(rapid.Int64Range(1, 20).Draw(t, "gap"))
	}
	n := rapid.IntRange(1, 4).Draw(t, "naggs")
	for i := range n {
		s.Aggregations = append(s.Aggregations, Aggregation{Name: fmt.Sprintf("a%d", i), Kind: rapid.SampledFrom(aggKinds).Draw(t, "agg")})
	}
	return s
}

// genValue draws an input value: exact numbers (integers and quarters,
// so float sums are exact in any order), strings, booleans, nil, and
// rarely something the aggregation must reject.
func genValue(t *rapid.T, kind AggKind) any {
	switch rapid.IntRange(0, 19).Draw(t, "vkind") {
	case 0, 1:
		return nil
	case 2:
		if kind == Count {
			return map[string]any{"x": 1} // count takes anything
		}
		if rapid.Bool().Draw(t, "bad") {
			return []int{1} // rejected by everything but count
		}
		return "s" // rejected by numeric aggregations
	case 3, 4, 5, 6:
		return float64(rapid.IntRange(-40, 40).Draw(t, "q")) / 4
	case 7:
		if kind == First || kind == Last || kind == DistinctCount || kind == Count {
			return rapid.SampledFrom([]any{"x", "y", true, false}).Draw(t, "scalar")
		}
	case 8:
		// Floats whose running sum depends on the order of addition.
		return rapid.SampledFrom([]any{0.1, 0.2, 0.3, 3.3, 1e16, -1e16, 1e-3}).Draw(t, "inexact")
	}
	return rapid.IntRange(-20, 20).Draw(t, "i")
}

// genOps draws a stream: several keys, a clock that mostly moves forward,
// jitter, bursts of equal times, far-late records and idle advances.
func genOps(t *rapid.T, s Spec, maxOps int) []op {
	n := rapid.IntRange(min(40, maxOps), maxOps).Draw(t, "nops")
	keys := []string{"a", "b", "c@d", "", "\x00z"}[:rapid.IntRange(1, 5).Draw(t, "nkeys")]
	clock := rapid.Int64Range(-60, 60).Draw(t, "clock0")
	jitter := rapid.SampledFrom([]int64{0, 2, 5, 10, 30}).Draw(t, "jitter")
	ops := make([]op, 0, n)
	for range n {
		var back int64
		switch k := rapid.IntRange(0, 99).Draw(t, "opkind"); {
		case k < 6:
			ops = append(ops, op{advance: true, to: clock + rapid.Int64Range(-10, 15).Draw(t, "to")})
			continue
		case k < 12: // burst: the same time again
		case k < 15:
			back = rapid.Int64Range(40, 200).Draw(t, "farlate")
		default:
			clock += rapid.Int64Range(0, 6).Draw(t, "tick")
		}
		tm := clock - back - rapid.Int64Range(0, jitter).Draw(t, "jit")
		vals := make([]any, len(s.Aggregations))
		for i, a := range s.Aggregations {
			vals[i] = genValue(t, a.Kind)
		}
		ops = append(ops, op{key: rapid.SampledFrom(keys).Draw(t, "key"), t: tm, vals: vals})
	}
	if rapid.Bool().Draw(t, "drain") {
		ops = append(ops, op{advance: true, to: math.MaxInt64})
	}
	return ops
}

// toExp converts an operator output into the oracle's form.
func toExp(t tb, out Output, err error) expOut {
	t.Helper()
	if err != nil {
		var re *RecordError
		if !errors.As(err, &re) {
			t.Fatalf("store error: %v", err)
		}
		if len(out.Results) != 0 || out.Late != nil {
			t.Fatalf("record error with output: %+v", out)
		}
		return expOut{Dirty: true}
	}
	e := expOut{Late: out.Late}
	for _, r := range out.Results {
		x := expResult{Key: r.Key, Start: r.Start, End: r.End, Revision: r.Revision, Final: r.Final, Retract: r.Retract}
		if r.Key != OutputKey(r.GroupKey, r.Start) {
			t.Fatalf("result key %q for group %q start %d", r.Key, r.GroupKey, r.Start)
		}
		if !r.Retract {
			x.Aggs = decodeValue(t, r)
		} else if r.Value != nil {
			t.Fatalf("retraction with a value: %s", r.Value)
		}
		e.Results = append(e.Results, x)
	}
	return e
}

// decodeValue parses a result value, checks its envelope and returns the
// aggregates with numbers as float64.
func decodeValue(t tb, r Result) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(r.Value))
	d.UseNumber()
	var v struct {
		Key         string
		WindowStart int64 `json:"window_start"`
		WindowEnd   int64 `json:"window_end"`
		Aggregates  map[string]any
		Revision    int64
		Final       bool
	}
	if err := d.Decode(&v); err != nil {
		t.Fatalf("result value %s: %v", r.Value, err)
	}
	if v.WindowStart != r.Start || v.WindowEnd != r.End || v.Revision != r.Revision || v.Final != r.Final {
		t.Fatalf("value %s disagrees with result %+v", r.Value, r)
	}
	if strings.ToValidUTF8(r.GroupKey, "\uFFFD") != v.Key {
		t.Fatalf("value key %q, group key %q", v.Key, r.GroupKey)
	}
	for k, x := range v.Aggregates {
		if n, ok := x.(json.Number); ok {
			f, err := n.Float64()
			if err != nil {
				t.Fatalf("aggregate %s=%s: %v", k, n, err)
			}
			v.Aggregates[k] = f
		}
	}
	return v.Aggregates
}

func newOp(t tb, s Spec) (*Operator, *changelog.Memory) {
	t.Helper()
	st := changelog.NewMemory()
	o, err := New(s, st)
	if err != nil {
		t.Fatal(err)
	}
	return o, st
}

func call(o *Operator, p op) (Output, error) {
	if p.advance {
		return o.AdvanceWatermark(p.to)
	}
	return o.Process(p.key, p.t, p.vals)
}

// TestOracle: for random specs and streams the operator's outputs equal
// the brute-force oracle's exactly, call by call, and the store keeps its
// invariants after every call.
func TestOracle(t *testing.T) {
	// What the generated streams exercised, so a weakened generator shows.
	seen := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		s := genSpec(rt)
		ops := genOps(rt, s, 200)
		o, st := newOp(rt, s)
		or := newOracle(s)
		seen["cases"]++
		seen[s.Kind.String()+"/"+s.Emit.String()]++
		for i, p := range ops {
			out, err := call(o, p)
			got := toExp(rt, out, err)
			want := or.step(p)
			if !reflect.DeepEqual(got, want) {
				rt.Fatalf("spec %+v\nop %d %v (watermark before %d)\n got  %s\n want %s", s, i, p, or.wm, dumpExp(got), dumpExp(want))
			}
			checkStore(rt, o, st)
			seen["ops"]++
			switch {
			case want.Dirty:
				seen["dirty"]++
			case want.Late != nil:
				seen["late"]++
			}
			for _, r := range want.Results {
				switch {
				case r.Retract:
					seen["retract"]++
				case r.Final:
					seen["final"]++
				case r.Revision > 1:
					seen["update"]++
				default:
					seen["first"]++
				}
			}
		}
	})
	t.Logf("exercised: %v", seen)
	if seen["cases"] >= 500 {
		for _, k := range []string{"dirty", "late", "retract", "final", "update", "first"} {
			if seen[k] == 0 {
				t.Errorf("the generator never produced a %s result", k)
			}
		}
	}
}

// TestOracleSessionMerges focuses on session merges in update mode: one
// or two keys and a jitter comparable to the gap, so sessions that
// already emitted are extended, bridged and moved earlier (retractions).
func TestOracleSessionMerges(t *testing.T) {
	retractions := 0
	rapid.Check(t, func(rt *rapid.T) {
		s := Spec{
			Kind: Session, Gap: msd(rapid.Int64Range(1, 10).Draw(rt, "gap")),
			MaxOutOfOrderness: msd(rapid.Int64Range(0, 5).Draw(rt, "ooo")),
			Grace:             msd(rapid.Int64Range(0, 60).Draw(rt, "grace")),
			Aggregations:      []Aggregation{{"n", Count}, {"first", First}, {"last", Last}, {"sum", Sum}},
		}
		ops := genOps(rt, s, 100)
		for i := range ops {
			if !ops[i].advance {
				ops[i].key = ops[i].key[:min(len(ops[i].key), 1)]
			}
		}
		o, st := newOp(rt, s)
		or := newOracle(s)
		for i, p := range ops {
			out, err := call(o, p)
			got := toExp(rt, out, err)
			want := or.step(p)
			if !reflect.DeepEqual(got, want) {
				rt.Fatalf("spec %+v\nop %d %v (watermark before %d)\n got  %s\n want %s", s, i, p, or.wm, dumpExp(got), dumpExp(want))
			}
			checkStore(rt, o, st)
			for _, r := range want.Results {
				if r.Retract {
					retractions++
				}
			}
		}
	})
	t.Logf("retractions: %d", retractions)
}

func dumpExp(e expOut) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// checkStore verifies the store layout: the meta watermark is the
// operator's; every window has exactly one timer, where timerAt puts it;
// every timer has its window; sessions of a key never touch; OpenWindows
// counts the windows; nothing purgeable is left.
func checkStore(t tb, o *Operator, st *changelog.Memory) {
	t.Helper()
	wins := map[string]*win{}
	var order []*win
	var bytes int64
	timers := map[string]int64{}
	err := st.Range(nil, func(k, v []byte) bool {
		switch k[0] {
		case nsMeta:
			m, err := decodeMeta(v)
			if err != nil || m.watermark != o.wm {
				t.Fatalf("meta %+v %v, watermark %d", m, err, o.wm)
			}
		case nsWindow:
			key, rest, ok := readKey(k[1:])
			start, rest2, ok2 := opkey.ReadTime(rest)
			if !ok || !ok2 || len(rest2) != 0 {
				t.Fatalf("bad window key %x", k)
			}
			w, err := decodeWindow(v, key, start, o.p.aggs)
			if err != nil {
				t.Fatal(err)
			}
			bytes += windowCost(len(k), len(v))
			id := fmt.Sprintf("%q@%d", key, start)
			wins[id] = w
			order = append(order, w)
		case nsTimer:
			tm, err := parseTimerKey(k)
			if err != nil || len(v) != 0 {
				t.Fatalf("timer %x: %v", k, err)
			}
			id := fmt.Sprintf("%q@%d", tm.key, tm.start)
			if _, dup := timers[id]; dup {
				t.Fatalf("two timers for %s", id)
			}
			timers[id] = tm.at
		case nsSource:
			src, rest, ok := readKey(k[1:])
			if m, seen := o.srcs[src]; !ok || len(rest) != 0 || !seen || string(v) != string(binary.AppendVarint(nil, m)) {
				t.Fatalf("source key %x = %x, operator has %v", k, v, o.srcs)
			}
		default:
			t.Fatalf("unknown key %x", k)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(wins) != o.OpenWindows() || len(timers) != len(wins) {
		t.Fatalf("%d windows, %d timers, OpenWindows %d", len(wins), len(timers), o.OpenWindows())
	}
	if bytes != o.StateBytes() {
		t.Fatalf("stored windows take %d bytes, StateBytes %d", bytes, o.StateBytes())
	}
	for id, w := range wins {
		at, ok := timers[id]
		if !ok || at != o.timerAt(w.end) {
			t.Fatalf("window %s end %d: timer %d (%v), want %d", id, w.end, at, ok, o.timerAt(w.end))
		}
		if w.end+o.p.grace <= o.wm {
			t.Fatalf("window %s end %d not purged at watermark %d", id, w.end, o.wm)
		}
	}
	if o.p.kind == Session {
		for i := 1; i < len(order); i++ {
			a, b := order[i-1], order[i]
			if a.key == b.key && b.start <= a.end {
				t.Fatalf("sessions %q [%d,%d) and [%d,%d) touch", a.key, a.start, a.end, b.start, b.end)
			}
		}
	}
}
