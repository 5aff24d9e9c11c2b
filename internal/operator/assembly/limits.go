package assembly

import (
	"bytes"
	"fmt"

	"github.com/sidestream/sidestream/internal/operator/opkey"
	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

func validateLimits(l statelimit.Limits) error {
	if err := l.Validate(); err != nil {
		return fmt.Errorf("assembly: %w", err)
	}
	return nil
}

// StateBytes is the estimated size of the open assemblies: for each, its
// stored key and value and its deadline timer key.
func (o *Operator) StateBytes() int64 { return o.bytes }

// assemblyCost is what one open assembly of id with a stored value of
// valueLen bytes counts in StateBytes: "a"+id, the value, and its timer
// key "t"+time+"a"+id.
func assemblyCost(idLen, valueLen int) int64 { return int64(2*idLen + 11 + valueLen) }

func (o *Operator) over(addBytes int64) *statelimit.Overflow {
	l := o.s.Limits
	if l.MaxEntries > 0 && o.open+1 > l.MaxEntries {
		return &statelimit.Overflow{Limit: statelimit.LimitEntries, Max: int64(l.MaxEntries), Size: int64(o.open)}
	}
	if l.MaxBytes > 0 && o.bytes+addBytes > l.MaxBytes {
		return &statelimit.Overflow{Limit: statelimit.LimitBytes, Max: l.MaxBytes, Size: o.bytes}
	}
	return nil
}

// admit applies the limits to a part that opens a new assembly of
// addBytes. False means refused (out.Overflow set). Under OverflowEvict
// it evicts until the new assembly fits or none is left, then admits.
func (o *Operator) admit(addBytes int64, out *Output) (bool, error) {
	if !o.s.Limits.Enabled() {
		return true, nil
	}
	ov := o.over(addBytes)
	if ov == nil {
		return true, nil
	}
	if o.s.Limits.Policy == statelimit.Route {
		out.Overflow = ov
		return false, nil
	}
	for ov != nil && o.open > 0 {
		n := max(o.open+1-o.s.Limits.MaxEntries, 1)
		var keys [][]byte
		var ierr error
		if err := o.st.Range(timerPrefix, func(k, _ []byte) bool {
			if len(k) < 10 {
				ierr = fmt.Errorf("timer key %q: %w", k, errCorrupt)
				return false
			}
			if k[9] == nsAssembly {
				keys = append(keys, bytes.Clone(k))
			}
			return len(keys) < n
		}); err != nil {
			return false, err
		}
		if ierr != nil {
			return false, ierr
		}
		if len(keys) == 0 {
			return false, fmt.Errorf("%d open assemblies without deadline timers: %w", o.open, errCorrupt)
		}
		for _, k := range keys {
			if err := o.evict(k, out); err != nil {
				return false, err
			}
			if ov = o.over(addBytes); ov == nil {
				break
			}
		}
	}
	return true, nil
}

// evict emits the assembly of deadline timer k as incomplete and evicted,
// and forgets it.
func (o *Operator) evict(k []byte, out *Output) error {
	at, _, _ := opkey.ReadTime(k[1:])
	id := string(k[10:])
	if err := o.st.Delete(k); err != nil {
		return err
	}
	akey := o.key(nsAssembly, id)
	b, ok, err := o.st.Get(akey)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("timer for missing assembly %q: %w", id, errCorrupt)
	}
	a, err := o.decode(b)
	if err != nil {
		return fmt.Errorf("assembly %q: %w", id, err)
	}
	// Emitted before the delete: a aliases b.
	o.addIncomplete(out, o.emit(id, a, false, true, at))
	out.Evicted++
	o.bytes -= assemblyCost(len(id), len(b))
	o.open--
	return o.st.Delete(o.key(nsAssembly, id))
}
