package window

import (
	"slices"
	"strconv"
)

// aggState is the running state of one aggregation in one window. Only
// the fields its kind needs are used (and encoded).
type aggState struct {
	n   int64     // Count, Avg: number of non-nil values
	num value     // Sum, Avg: the integer part (vInt or vNone); Min, Max: the extreme; vNone when empty
	fp  []float64 // Sum, Avg: the float part, exact (exactsum.go)
	t   int64     // First, Last: event time of v
	v   value     // First, Last: the value; vNone when empty
	set []string  // DistinctCount: canonical values, sorted
}

// check reports the RecordError reason for an input an aggregation cannot
// take, or "" when it is acceptable.
func check(kind AggKind, v value) string {
	if v.k == vNone {
		return ""
	}
	switch kind {
	case Count:
		return ""
	case Sum, Min, Max, Avg:
		if !v.number() {
			return ReasonValueType
		}
	case First, Last, DistinctCount:
		if !v.scalar() {
			return ReasonValueType
		}
	}
	return ""
}

// apply adds one record's value to st. ok is false when a sum stops being
// finite; st is then unspecified (callers work on a copy).
func (st *aggState) apply(kind AggKind, v value, t int64) bool {
	if v.k == vNone {
		return true
	}
	switch kind {
	case Count:
		st.n++
	case Sum:
		return st.addNum(v)
	case Avg:
		st.n++
		return st.addNum(v)
	case Min:
		if st.num.k == vNone || less(v, st.num) {
			st.num = v
		}
	case Max:
		if st.num.k == vNone || less(st.num, v) {
			st.num = v
		}
	case First:
		if st.v.k == vNone || t < st.t || t == st.t && order(v, st.v) < 0 {
			st.v, st.t = v, t
		}
	case Last:
		if st.v.k == vNone || t > st.t || t == st.t && order(v, st.v) > 0 {
			st.v, st.t = v, t
		}
	case DistinctCount:
		c := canonical(v)
		if i, found := slices.BinarySearch(st.set, c); !found {
			st.set = slices.Insert(st.set, i, c)
		}
	}
	return true
}

// merge folds the state of another session into st. First and Last
// break ties between equal event times as apply does.
func (st *aggState) merge(kind AggKind, o aggState) bool {
	switch kind {
	case Count:
		st.n += o.n
	case Sum, Avg:
		st.n += o.n
		if o.num.k == vInt && !st.addNum(o.num) {
			return false
		}
		for _, f := range o.fp {
			if !st.addNum(value{k: vFloat, f: f}) {
				return false
			}
		}
	case Min:
		if o.num.k != vNone && (st.num.k == vNone || less(o.num, st.num)) {
			st.num = o.num
		}
	case Max:
		if o.num.k != vNone && (st.num.k == vNone || less(st.num, o.num)) {
			st.num = o.num
		}
	case First:
		if o.v.k != vNone && (st.v.k == vNone || o.t < st.t || o.t == st.t && order(o.v, st.v) < 0) {
			st.v, st.t = o.v, o.t
		}
	case Last:
		if o.v.k != vNone && (st.v.k == vNone || o.t > st.t || o.t == st.t && order(o.v, st.v) > 0) {
			st.v, st.t = o.v, o.t
		}
	case DistinctCount:
		for _, c := range o.set {
			if i, found := slices.BinarySearch(st.set, c); !found {
				st.set = slices.Insert(st.set, i, c)
			}
		}
	}
	return true
}

// appendResult appends the aggregate's current result as JSON.
func (st *aggState) appendResult(b []byte, kind AggKind) []byte {
	switch kind {
	case Count:
		return strconv.AppendInt(b, st.n, 10)
	case Sum:
		return appendJSON(b, st.sum())
	case Min, Max:
		return appendJSON(b, st.num)
	case Avg:
		if st.n == 0 {
			return append(b, "null"...)
		}
		return appendFloat(b, st.sum().float()/float64(st.n))
	case First, Last:
		return appendJSON(b, st.v)
	case DistinctCount:
		return strconv.AppendInt(b, int64(len(st.set)), 10)
	}
	return append(b, "null"...)
}
