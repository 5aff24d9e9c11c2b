package window

import (
	"fmt"
	"math"

	"github.com/sidestream/sidestream/internal/operator/opkey"
	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

func validateLimits(l statelimit.Limits, windowsPerRecord int64) error {
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
func (o *Operator) Limits() statelimit.Limits { return o.p.lim }

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
func (o *Operator) over(addEntries int, addBytes int64) *statelimit.Overflow {
	l := o.p.lim
	if l.MaxEntries > 0 && o.open+addEntries > l.MaxEntries {
		return &statelimit.Overflow{Limit: statelimit.LimitEntries, Max: int64(l.MaxEntries), Size: int64(o.open)}
	}
	if l.MaxBytes > 0 && o.bytes+addBytes > l.MaxBytes {
		return &statelimit.Overflow{Limit: statelimit.LimitBytes, Max: l.MaxBytes, Size: o.bytes}
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
	if o.p.lim.Policy == statelimit.Route {
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
		o.pbuf = opkey.AppendTime(append(o.pbuf[:0], nsTimer), o.wm+1)
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
