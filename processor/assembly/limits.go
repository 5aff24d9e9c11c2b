package assembly

import (
	"bytes"
	"fmt"
)

// Policy is what the operator does with a part that would open an
// assembly beyond its Limits.
type Policy uint8

// Overflow policies.
const (
	// NoLimit: Limits are not enforced (the zero value).
	NoLimit Policy = iota
	// OverflowRoute refuses the part: no state changes and the caller
	// writes it, unchanged, to the overflow route (Output.Overflow). The
	// part's time still moves the clock.
	OverflowRoute
	// OverflowEvict makes room: the open assemblies with the earliest
	// deadline (ties by ID) are emitted at once as incomplete, with
	// Evicted set, and forgotten.
	OverflowEvict
)

func (p Policy) String() string {
	switch p {
	case NoLimit:
		return "none"
	case OverflowRoute:
		return "route"
	case OverflowEvict:
		return "evict"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// Limits bound the open assemblies of one operator (one task). They gate
// only new assemblies: a part for an open one always updates it, so parts
// may take the bytes past MaxBytes. Completed-ID markers (Retention) are
// not counted. Decisions depend only on the stored state, so a replay or
// a restore decides the same way.
type Limits struct {
	MaxEntries int   // open assemblies; 0 is no bound
	MaxBytes   int64 // StateBytes; 0 is no bound
	Policy     Policy
}

// Limit names of an Overflow.
const (
	LimitEntries = "max_entries"
	LimitBytes   = "max_bytes"
)

// Overflow describes a part refused by OverflowRoute.
type Overflow struct {
	Limit     string // LimitEntries or LimitBytes
	Max, Size int64  // the bound, and the state's size when the part came
}

func (l Limits) enabled() bool { return l.Policy != NoLimit && (l.MaxEntries > 0 || l.MaxBytes > 0) }

func (l Limits) validate() error {
	switch {
	case l.MaxEntries < 0 || l.MaxBytes < 0:
		return fmt.Errorf("assembly: limits must not be negative")
	case l.Policy > OverflowEvict:
		return fmt.Errorf("assembly: unknown overflow policy %v", l.Policy)
	case l.Policy != NoLimit && l.MaxEntries == 0 && l.MaxBytes == 0:
		return fmt.Errorf("assembly: an overflow policy needs max_entries or max_bytes")
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

func (o *Operator) over(addBytes int64) *Overflow {
	l := o.s.Limits
	if l.MaxEntries > 0 && o.open+1 > l.MaxEntries {
		return &Overflow{Limit: LimitEntries, Max: int64(l.MaxEntries), Size: int64(o.open)}
	}
	if l.MaxBytes > 0 && o.bytes+addBytes > l.MaxBytes {
		return &Overflow{Limit: LimitBytes, Max: l.MaxBytes, Size: o.bytes}
	}
	return nil
}

// admit applies the limits to a part that opens a new assembly of
// addBytes. False means refused (out.Overflow set). Under OverflowEvict
// it evicts until the new assembly fits or none is left, then admits.
func (o *Operator) admit(addBytes int64, out *Output) (bool, error) {
	if !o.s.Limits.enabled() {
		return true, nil
	}
	ov := o.over(addBytes)
	if ov == nil {
		return true, nil
	}
	if o.s.Limits.Policy == OverflowRoute {
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
	at, _, _ := readTime(k[1:])
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
	a, err := decodeState(b)
	if err != nil {
		return fmt.Errorf("assembly %q: %w", id, err)
	}
	o.bytes -= assemblyCost(len(id), len(b))
	if err := o.st.Delete(o.key(nsAssembly, id)); err != nil {
		return err
	}
	o.open--
	as := o.emit(id, a, false, at)
	as.Evicted = true
	as.Value = append(as.Value[:len(as.Value)-1], `,"evicted":true}`...)
	out.Incomplete = append(out.Incomplete, as)
	out.Evicted++
	return nil
}
