package window

import (
	"fmt"
	"strconv"

	"github.com/sidestream/sidestream/internal/operator/opkey"
	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

// Output is what one call produced.
type Output struct {
	// Results to write to the window result route, in emission order:
	// window end, then group key, then window start.
	Results []Result
	// Late is set when the record was late: it changed nothing and goes to
	// the late route unchanged.
	Late *Late
	// Overflow is set when Limits refused the record (OverflowRoute): it
	// changed no window and goes to the overflow route unchanged. It
	// still moved the watermark (Results may hold what that closed).
	Overflow *statelimit.Overflow
	// Evicted counts the windows OverflowEvict purged early for this
	// record; their results are in Results with Evicted set.
	Evicted int
}

// Result is one emitted window result.
//
// Key is "<group key>@<start>" with start in decimal epoch milliseconds
// (the group key may itself contain '@': split at the last one). Value is
//
//	{"key":"k","window_start":0,"window_end":60000,"aggregates":{"n":3},"revision":1,"final":false}
//
// with times in epoch milliseconds and aggregates in Spec order. A
// retraction (Retract, Value nil) tells an upsert sink to delete Key: the
// session it named was merged into another one, and Key will never be
// emitted again.
type Result struct {
	Key        string
	GroupKey   string
	Start, End int64
	Revision   int64
	Final      bool
	Retract    bool
	// Evicted: a final result emitted early by OverflowEvict; the value
	// carries "evicted":true. A later record for the same window opens
	// it again (same Key, revision from 1).
	Evicted bool
	Value   []byte
	// Traces are the trace contexts the window kept (Spec.Traces), the
	// first record's that carried one first; the caller's to keep. Nil
	// on a retraction.
	Traces [][]byte
}

// Span is a window [Start, End).
type Span struct{ Start, End int64 }

func (s Span) String() string { return fmt.Sprintf("[%d,%d)", s.Start, s.End) }

// Late describes a late record.
type Late struct {
	// Watermark when the record arrived.
	Watermark int64
	// Windows the record belongs to, all already purged, ascending.
	Windows []Span
	// LateBy is how far the watermark was past the last moment the record
	// would have been accepted: Watermark − (max End + grace) >= 0.
	LateBy int64
}

// OutputKey is the result key of a window.
func OutputKey(groupKey string, start int64) string {
	return groupKey + "@" + strconv.FormatInt(start, 10)
}

func (o *Operator) result(w *win, final bool) Result {
	b := make([]byte, 0, 96+len(w.key)+16*len(w.aggs))
	b = append(b, `{"key":`...)
	b = appendString(b, w.key)
	b = append(b, `,"window_start":`...)
	b = strconv.AppendInt(b, w.start, 10)
	b = append(b, `,"window_end":`...)
	b = strconv.AppendInt(b, w.end, 10)
	b = append(b, `,"aggregates":{`...)
	for i, a := range o.p.aggs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, a.Name)
		b = append(b, ':')
		b = w.aggs[i].appendResult(b, a.Kind)
	}
	b = append(b, `},"revision":`...)
	b = strconv.AppendInt(b, w.rev, 10)
	b = append(b, `,"final":`...)
	b = strconv.AppendBool(b, final)
	b = append(b, '}')
	return Result{
		Key: OutputKey(w.key, w.start), GroupKey: w.key,
		Start: w.start, End: w.end, Revision: w.rev, Final: final, Value: b,
		Traces: w.traces(),
	}
}

// Reasons of a RecordError: bounded, for metrics labels and dirty headers.
const (
	ReasonEventTime   = "event_time_out_of_range"
	ReasonValueCount  = "value_count"
	ReasonValueType   = "value_type"
	ReasonNonFinite   = "value_not_finite"
	ReasonAggOverflow = "aggregate_overflow"
)

// RecordError is a problem with one record: the caller sends the record to
// the dirty route with Reason and goes on. The record changed nothing.
type RecordError struct {
	Reason    string
	Aggregate string // the aggregation concerned, if any
	Detail    string
}

func (e *RecordError) Error() string {
	if e.Aggregate != "" {
		return fmt.Sprintf("window: %s: aggregation %q: %s", e.Reason, e.Aggregate, e.Detail)
	}
	return fmt.Sprintf("window: %s: %s", e.Reason, e.Detail)
}

// WindowsOf returns the windows (sessions) held for one group key, in
// start order, as results of their current state: the aggregates and the
// revision of the last emission (0 while a window has not fired yet).
// Final is false for all of them: they are open. It reads the store only.
func (o *Operator) WindowsOf(key string) ([]Result, error) {
	prefix := appendWindowPrefix(nil, key)
	var out []Result
	var derr error
	err := o.st.Range(prefix, func(k, v []byte) bool {
		start, rest, ok := opkey.ReadTime(k[len(prefix):])
		if !ok || len(rest) != 0 {
			derr = fmt.Errorf("%w: window key %q", errCorrupt, k)
			return false
		}
		w, err := decodeWindow(v, key, start, o.p.aggs)
		if err != nil {
			derr = err
			return false
		}
		out = append(out, o.result(w, false))
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}
