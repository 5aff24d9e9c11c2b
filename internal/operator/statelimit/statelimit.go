// Package statelimit is what the window and assembly operators share of
// their state limits: the bounds, the overflow policy and what a refused
// record is told. Each operator decides from its own stored state alone
// (so a replay or a restore decides the same way); see the Limits
// documentation of package window and package assembly.
package statelimit

import (
	"errors"
	"fmt"
)

// Policy is what an operator does with a record that would open new
// state (a window, an assembly) beyond its Limits.
type Policy uint8

// Overflow policies.
const (
	// None: Limits are not enforced (the zero value).
	None Policy = iota
	// Route refuses the record: it changes no state and the caller
	// writes it, unchanged, to the overflow route. Its time still moves
	// the operator's clock, so full state drains as time passes.
	Route
	// Evict makes room: the open state that would close first is emitted
	// at once, marked evicted, and purged.
	Evict
)

func (p Policy) String() string {
	switch p {
	case None:
		return "none"
	case Route:
		return "route"
	case Evict:
		return "evict"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// Limits bound the state of one operator (one task). They gate only the
// admission of new state: a record for state that exists always updates
// it, so that state's own growth may take the bytes past MaxBytes.
type Limits struct {
	MaxEntries int   // open windows (sessions) or assemblies; 0 is no bound
	MaxBytes   int64 // the operator's StateBytes estimate; 0 is no bound
	Policy     Policy
}

// Names of the limit an Overflow met.
const (
	LimitEntries = "max_entries"
	LimitBytes   = "max_bytes"
)

// Overflow describes a record refused by Route.
type Overflow struct {
	Limit     string // LimitEntries or LimitBytes
	Max, Size int64  // the bound, and the state's size when the record came
}

// Enabled reports whether the limits are enforced.
func (l Limits) Enabled() bool { return l.Policy != None && (l.MaxEntries > 0 || l.MaxBytes > 0) }

// ErrInvalid is wrapped by every Validate error.
var ErrInvalid = errors.New("invalid state limits")

// Validate checks what every operator requires of its limits.
func (l Limits) Validate() error {
	switch {
	case l.MaxEntries < 0 || l.MaxBytes < 0:
		return fmt.Errorf("%w: limits must not be negative", ErrInvalid)
	case l.Policy > Evict:
		return fmt.Errorf("%w: unknown overflow policy %v", ErrInvalid, l.Policy)
	case l.Policy != None && l.MaxEntries == 0 && l.MaxBytes == 0:
		return fmt.Errorf("%w: an overflow policy needs max_entries or max_bytes", ErrInvalid)
	}
	return nil
}
