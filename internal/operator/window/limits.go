package window

import (
	"fmt"
	"math"

	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

// Policy is what a window operator does with a record that would open a
// window beyond its Limits.
type Policy = statelimit.Policy

// Overflow policies.
const (
	// NoLimit: Limits are not enforced (the zero value).
	NoLimit = statelimit.None
	// OverflowRoute refuses the record: it changes no window and the
	// caller writes it, unchanged, to the overflow route (Output.Overflow).
	// It still moves the watermark, so full state drains as time passes.
	OverflowRoute = statelimit.Route
	// OverflowEvict makes room: the windows whose next timer is earliest
	// (the ones that would close first; ties by key, then start) are
	// emitted at once as final results with Evicted set, and purged.
	OverflowEvict = statelimit.Evict
)

// Limits bound the state of one operator (one task). They gate only the
// admission of new windows: a record for windows that exist always
// updates them, so a window's own growth (distinct_count) may take the
// bytes past MaxBytes. Every decision is made in record order from the
// stored state alone, so a replay or a restore decides the same way.
// MaxEntries counts open windows (sessions).
type Limits = statelimit.Limits

// Reasons of an Overflow: the limit a record would have passed.
const (
	LimitEntries = statelimit.LimitEntries
	LimitBytes   = statelimit.LimitBytes
)

// Overflow describes a record refused by OverflowRoute: the limit, the
// configured bound and the state's size (open windows or bytes) when the
// record arrived.
type Overflow = statelimit.Overflow

func validateLimits(l Limits, windowsPerRecord int64) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if l.MaxEntries > 0 && int64(l.MaxEntries) < windowsPerRecord {
		return fmt.Errorf("%w: max_entries %d is below the %d windows one record opens", ErrSpec, l.MaxEntries, windowsPerRecord)
	}
	return nil
}

// StateBytes is the estimated size of the open windows: for each, its
// stored key and value and its timer key. It depends only on the stored
// windows, so a restored operator counts the same.
func (o *Operator) StateBytes() int64 { return o.bytes }

// Limits returns the enforced limits.
func (o *Operator) Limits() Limits { return o.p.lim }

// windowCost is what one stored window counts in StateBytes: its key, its
// value and its timer key (the window key plus the 8-byte time).
func windowCost(keyLen, valueLen int) int64 { return int64(2*keyLen + 8 + valueLen) }

// cost is the StateBytes of w as it would be stored now.
func (o *Operator) cost(w *win) int64 {
	o.kbuf = appendWindowKey(o.kbuf[:0], w.key, w.start)
	o.vbuf = appendWindow(o.vbuf[:0], w, o.p.aggs)
	return windowCost(len(o.kbuf), len(o.vbuf))
}

// over reports the first limit that admitting addEntries windows and
// addBytes bytes would pass ("" when none).
func (o *Operator) over(addEntries int, addBytes int64) *Overflow {
	l := o.p.lim
	if l.MaxEntries > 0 && o.open+addEntries > l.MaxEntries {
		return &Overflow{Limit: LimitEntries, Max: int64(l.MaxEntries), Size: int64(o.open)}
	}
	if l.MaxBytes > 0 && o.bytes+addBytes > l.MaxBytes {
		return &Overflow{Limit: LimitBytes, Max: l.MaxBytes, Size: o.bytes}
	}
	return nil
}

// admit applies the limits to a record that opens addEntries windows and
// adds addBytes. It returns false when the record is refused
// (OverflowRoute: out.Overflow is set). Under OverflowEvict it evicts
// windows, never one for which keep is true, until the new ones fit or
// nothing else is left; then the record is admitted regardless (one
// record's windows larger than max_bytes on their own).
func (o *Operator) admit(addEntries int, addBytes int64, keep func(key string, start int64) bool, nkeep int, out *Output) (bool, error) {
	if addEntries == 0 || !o.p.lim.Enabled() {
		return true, nil
	}
	ov := o.over(addEntries, addBytes)
	if ov == nil {
		return true, nil
	}
	if o.p.lim.Policy == OverflowRoute {
		out.Overflow = ov
		return false, nil
	}
	for ov != nil {
		// The batch is the excess of entries (at least one), plus the
		// nkeep windows keep may skip; a byte excess takes as many batches as needed.
		n := max(o.open+addEntries-o.p.lim.MaxEntries, 1) + nkeep
		cands, err := o.oldest(n)
		if err != nil {
			return false, err
		}
		evicted := false
		for _, tm := range cands {
			if keep != nil && keep(tm.key, tm.start) {
				continue
			}
			if err := o.evict(tm, out); err != nil {
				return false, err
			}
			evicted = true
			if ov = o.over(addEntries, addBytes); ov == nil {
				break
			}
		}
		if !evicted {
			break
		}
	}
	return true, nil
}

// oldest returns up to n timers in timer order: the windows that would
// close first.
func (o *Operator) oldest(n int) ([]timer, error) {
	var out []timer
	var perr error
	scan := func(k, _ []byte) bool {
		tm, err := parseTimerKey(k)
		if err != nil {
			perr = err
			return false
		}
		out = append(out, tm)
		return len(out) < n
	}
	var err error
	// Every live timer is past the watermark: a store that can seek
	// starts there, above the deleted timers of earlier advances.
	if sk, ok := o.st.(interface {
		RangeFrom(prefix, start []byte, fn func(key, value []byte) bool) error
	}); ok && o.wm > math.MinInt64 {
		o.pbuf = appendTime(append(o.pbuf[:0], nsTimer), o.wm+1)
		err = sk.RangeFrom(timerPrefix, o.pbuf, scan)
	} else {
		err = o.st.Range(timerPrefix, scan)
	}
	if err == nil {
		err = perr
	}
	return out, err
}

// evict emits the window of tm as a final, evicted result and purges it.
func (o *Operator) evict(tm timer, out *Output) error {
	w, err := o.takeTimer(tm)
	if err != nil {
		return err
	}
	o.kbuf = appendWindowKey(o.kbuf[:0], w.key, w.start)
	if err := o.st.Delete(o.kbuf); err != nil {
		return err
	}
	o.open--
	o.bytes -= w.size
	w.rev++
	r := o.result(w, true)
	r.Evicted = true
	r.Value = append(r.Value[:len(r.Value)-1], `,"evicted":true}`...)
	out.Results = append(out.Results, r)
	out.Evicted++
	return nil
}
