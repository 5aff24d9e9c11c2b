package window

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

type in struct {
	t int64
	v any
}

// aggregate runs inputs through one aggregation of a tumbling [0,100)
// window (final mode) and returns the aggregate's JSON and the reasons of
// rejected inputs, by input index.
func aggregate(t *testing.T, kind AggKind, ins []in) (string, map[int]string) {
	t.Helper()
	s := Spec{Kind: Tumbling, Size: msd(100), MaxOutOfOrderness: msd(100), Emit: EmitFinal, Aggregations: []Aggregation{{"x", kind}}}
	o, st := newOp(t, s)
	rejected := map[int]string{}
	for i, r := range ins {
		out, err := o.Process("k", r.t, []any{r.v})
		var re *RecordError
		if errors.As(err, &re) {
			rejected[i] = re.Reason
			continue
		}
		if err != nil || len(out.Results) != 0 || out.Late != nil {
			t.Fatalf("input %d: %+v %v", i, out, err)
		}
	}
	out, err := o.AdvanceWatermark(100)
	if err != nil {
		t.Fatal(err)
	}
	if st.Len() != 1 { // only the meta key is left
		t.Fatalf("store has %d keys after purge", st.Len())
	}
	if len(out.Results) != 1 {
		if len(ins) == len(rejected) && len(out.Results) == 0 {
			return "<no window>", rejected
		}
		t.Fatalf("results %+v", out.Results)
	}
	var v struct{ Aggregates map[string]json.RawMessage }
	if err := json.Unmarshal(out.Results[0].Value, &v); err != nil {
		t.Fatal(err)
	}
	return string(v.Aggregates["x"]), rejected
}

func TestAggregations(t *testing.T) {
	big := int64(math.MaxInt64 - 1)
	tests := []struct {
		name     string
		kind     AggKind
		ins      []in
		want     string
		rejected map[int]string
	}{
		{"count skips nil, takes any type", Count, []in{{1, 1}, {2, nil}, {3, "s"}, {4, map[string]any{}}, {5, false}}, `4`, nil},
		{"count of nothing", Count, []in{{1, nil}}, `0`, nil},
		{"sum of ints stays int", Sum, []in{{1, 1}, {2, int64(2)}, {3, uint8(3)}, {4, nil}}, `6`, nil},
		{"sum with a float", Sum, []in{{1, 1}, {2, 0.5}}, `1.5`, nil},
		{"sum json.Number", Sum, []in{{1, json.Number("2")}, {2, json.Number("0.25")}}, `2.25`, nil},
		{"sum overflow turns float", Sum, []in{{1, big}, {2, big}}, `18446744073709552000`, nil},
		{"sum of only nils is null", Sum, []in{{1, nil}}, `null`, nil},
		{"sum rejects strings and bools", Sum, []in{{1, 1}, {2, "2"}, {3, true}, {4, []int{1}}}, `1`, map[int]string{1: ReasonValueType, 2: ReasonValueType, 3: ReasonValueType}},
		{"sum rejects NaN and Inf", Sum, []in{{1, math.NaN()}, {2, math.Inf(1)}, {3, 2}}, `2`, map[int]string{0: ReasonNonFinite, 1: ReasonNonFinite}},
		{"float sum that would be infinite is rejected", Sum, []in{{1, math.MaxFloat64}, {2, math.MaxFloat64}}, `1.7976931348623157e+308`, map[int]string{1: ReasonAggOverflow}},
		{"huge uint64 is a float", Sum, []in{{1, uint64(math.MaxUint64)}}, `18446744073709552000`, nil},
		{"min", Min, []in{{1, 3}, {2, -1.5}, {3, nil}, {4, 7}}, `-1.5`, nil},
		{"min ints exact beyond 2^53", Min, []in{{1, int64(1<<53 + 1)}, {2, int64(1 << 53)}}, `9007199254740992`, nil},
		{"max", Max, []in{{1, 3}, {2, -1.5}, {3, 7}}, `7`, nil},
		{"max of nothing is null", Max, nil, `<no window>`, nil},
		{"max rejects strings", Max, []in{{1, "z"}, {2, 1}}, `1`, map[int]string{0: ReasonValueType}},
		{"avg", Avg, []in{{1, 1}, {2, 2}, {3, nil}, {4, 4}}, `2.3333333333333335`, nil},
		{"avg of nothing is null", Avg, []in{{1, nil}}, `null`, nil},
		{"first by event time, not arrival", First, []in{{5, "b"}, {3, "a"}, {9, "c"}}, `"a"`, nil},
		{"first tie goes to the least value", First, []in{{3, "y"}, {3, "x"}}, `"x"`, nil},
		{"first tie: false < true < numbers < strings", First, []in{{3, "a"}, {3, 2}, {3, true}, {3, false}}, `false`, nil},
		{"first tie: an int before an equal float", First, []in{{3, 1.5}, {3, 1.0}, {3, 1}}, `1`, nil},
		{"first skips nil", First, []in{{1, nil}, {2, true}}, `true`, nil},
		{"last by event time", Last, []in{{5, "b"}, {9, "c"}, {3, "a"}}, `"c"`, nil},
		{"last tie goes to the greatest value", Last, []in{{3, "y"}, {3, "x"}}, `"y"`, nil},
		{"last tie: strings after numbers", Last, []in{{3, "a"}, {3, 99}, {3, true}}, `"a"`, nil},
		{"last tie: numbers by value", Last, []in{{3, 10}, {3, 9.5}, {3, -1}}, `10`, nil},
		{"last number", Last, []in{{1, 2.5}}, `2.5`, nil},
		{"first rejects non-scalars", First, []in{{1, []any{1}}, {2, 1}}, `1`, map[int]string{0: ReasonValueType}},
		{"distinct count", DistinctCount, []in{{1, "a"}, {2, "a"}, {3, "b"}, {4, 1}, {5, 1.0}, {6, "1"}, {7, true}, {8, nil}}, `5`, nil},
		{"distinct rejects maps", DistinctCount, []in{{1, map[string]any{}}, {2, "a"}}, `1`, map[int]string{0: ReasonValueType}},
		{"strings are escaped", Last, []in{{1, "q\"\\\n\x01\u2028\xff"}}, `"q\"\\\n\u0001\u2028` + "\uFFFD" + `"`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, rejected := aggregate(t, tc.kind, tc.ins)
			if got != tc.want {
				t.Errorf("aggregate = %s, want %s", got, tc.want)
			}
			if tc.rejected == nil {
				tc.rejected = map[int]string{}
			}
			if len(rejected) != len(tc.rejected) {
				t.Errorf("rejected %v, want %v", rejected, tc.rejected)
			}
			for i, r := range tc.rejected {
				if rejected[i] != r {
					t.Errorf("input %d rejected with %q, want %q", i, rejected[i], r)
				}
			}
		})
	}
}

// A rejected record changes nothing: not the window it would have joined
// and not the watermark.
func TestRejectedRecordChangesNothing(t *testing.T) {
	s := Spec{Kind: Hopping, Size: msd(10), Advance: msd(5), Aggregations: []Aggregation{{"n", Count}, {"s", Sum}}}
	o, st := newOp(t, s)
	if _, err := o.Process("k", 7, []any{1, math.MaxFloat64}); err != nil {
		t.Fatal(err)
	}
	st.ResetChanges()
	before := dumpStore(t, st)
	for _, vals := range [][]any{{1, "x"}, {1}, {1, math.MaxFloat64}, {1, math.NaN()}} {
		_, err := o.Process("k", 8, vals)
		var re *RecordError
		if !errors.As(err, &re) {
			t.Fatalf("%v: err %v, want a RecordError", vals, err)
		}
		if !strings.HasPrefix(re.Error(), "window: "+re.Reason) {
			t.Fatalf("error text %q", re.Error())
		}
	}
	for _, tm := range []int64{MaxEventTime + 1, MinEventTime - 1, math.MinInt64} {
		if _, err := o.Process("k", tm, []any{1, 1}); err == nil || err.(*RecordError).Reason != ReasonEventTime {
			t.Fatalf("event time %d: %v", tm, err)
		}
	}
	if o.Watermark() != 7 || len(st.Changes()) != 0 {
		t.Fatalf("watermark %d, changes %d", o.Watermark(), len(st.Changes()))
	}
	if got := dumpStore(t, st); len(got) != len(before) {
		t.Fatalf("state changed: %d keys, was %d", len(got), len(before))
	}
}

func TestSpecValidation(t *testing.T) {
	aggs := []Aggregation{{"n", Count}}
	bad := []Spec{
		{},
		{Kind: Tumbling, Aggregations: aggs},
		{Kind: Tumbling, Size: -msd(1), Aggregations: aggs},
		{Kind: Tumbling, Size: 1500 * 1000, Aggregations: aggs}, // 1.5 ms
		{Kind: Tumbling, Size: msd(10), Advance: msd(5), Aggregations: aggs},
		{Kind: Tumbling, Size: msd(10), Gap: msd(5), Aggregations: aggs},
		{Kind: Hopping, Size: msd(10), Aggregations: aggs},
		{Kind: Hopping, Size: msd(10), Advance: msd(11), Aggregations: aggs},
		{Kind: Hopping, Size: msd(100000), Advance: msd(1), Aggregations: aggs},
		{Kind: Session, Aggregations: aggs},
		{Kind: Session, Gap: msd(5), Size: msd(5), Aggregations: aggs},
		{Kind: Tumbling, Size: msd(10), Grace: -msd(1), Aggregations: aggs},
		{Kind: Tumbling, Size: msd(10), MaxOutOfOrderness: -msd(1), Aggregations: aggs},
		{Kind: Tumbling, Size: msd(10), Emit: 7, Aggregations: aggs},
		{Kind: Tumbling, Size: msd(10)},
		{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{"", Count}}},
		{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{"n", Count}, {"n", Sum}}},
		{Kind: Tumbling, Size: msd(10), Aggregations: []Aggregation{{"n", 0}}},
	}
	for i, s := range bad {
		if err := s.Validate(); !errors.Is(err, ErrSpec) {
			t.Errorf("spec %d %+v: %v, want ErrSpec", i, s, err)
		}
		if _, err := New(s, nil); err == nil {
			t.Errorf("New accepted spec %d", i)
		}
	}
	for _, name := range []string{"count", "sum", "min", "max", "avg", "first", "last", "distinct_count"} {
		k, err := ParseAggKind(name)
		if err != nil || k.String() != name {
			t.Errorf("ParseAggKind(%q) = %v, %v", name, k, err)
		}
	}
	if _, err := ParseAggKind("median"); err == nil {
		t.Error("ParseAggKind accepted median")
	}
}
