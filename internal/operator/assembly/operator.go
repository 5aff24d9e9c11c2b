package assembly

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sidestream/sidestream/internal/operator/opkey"
	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

// Store is what the operator needs from a state store;
// changelog.Store satisfies it. See changelog.Store for the contract.
type Store interface {
	Get(key []byte) ([]byte, bool, error)
	Set(key, value []byte) error
	Delete(key []byte) error
	Range(prefix []byte, fn func(key, value []byte) bool) error
}

// DuplicateMode says which of two copies of one part an open assembly
// keeps.
type DuplicateMode int

const (
	// LastWins keeps the newest copy (the default).
	LastWins DuplicateMode = iota
	// FirstWins keeps the copy that arrived first.
	FirstWins
)

// Spec configures one assembly operator.
type Spec struct {
	// Parts names every part, in output order. Names are unique and
	// non-empty.
	Parts []string
	// Required is the completion rule: the parts that are enough. Empty
	// means all of Parts.
	Required []string
	// TTL is how long an assembly may stay open after its first part,
	// on the operator's clock. It must be positive.
	TTL time.Duration
	// Retention is how long a completed ID is remembered, so that late
	// parts go to the duplicate route instead of opening a new assembly.
	// 0 remembers nothing.
	Retention  time.Duration
	Duplicates DuplicateMode
	// Limits bound the open assemblies (default: none). They gate only
	// new assemblies: a part for an open one always updates it.
	// statelimit.Route refuses the part (no state changes; its time still
	// moves the clock; the caller writes it to the overflow route);
	// statelimit.Evict emits the open assemblies with the earliest
	// deadline (ties by ID) as incomplete, with Evicted set. Completed-ID
	// markers (Retention) are not counted.
	Limits statelimit.Limits
	// Described is the caller's canonical description of what the state
	// depends on (stage two: the plan's StateSpec), kept in the store
	// under its own key with the first clock it writes. A store holding
	// another description is refused (SpecChangedError); one holding none
	// (written by an older version, which kept no spec) is taken as it is.
	Described []byte
}

// ErrSpecChanged means the store holds state written under another spec
// (Spec.Described); New returns it wrapped in a *SpecChangedError.
var ErrSpecChanged = errors.New("assembly: store was written with a different spec")

// SpecChangedError is New's error for a store written under another
// spec; Stored is the description it holds.
type SpecChangedError struct {
	Stored []byte
}

func (e *SpecChangedError) Error() string { return ErrSpecChanged.Error() }
func (e *SpecChangedError) Unwrap() error { return ErrSpecChanged }

// StoredSpec is the description the store holds.
func (e *SpecChangedError) StoredSpec() []byte { return e.Stored }

// Validate checks the spec.
func (s Spec) Validate() error {
	if len(s.Parts) == 0 {
		return errors.New("assembly: no parts")
	}
	seen := map[string]bool{}
	for _, p := range s.Parts {
		if p == "" {
			return errors.New("assembly: empty part name")
		}
		if seen[p] {
			return fmt.Errorf("assembly: part %q twice", p)
		}
		seen[p] = true
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		if !seen[r] {
			return fmt.Errorf("assembly: required part %q is not a part", r)
		}
		if req[r] {
			return fmt.Errorf("assembly: required part %q twice", r)
		}
		req[r] = true
	}
	if s.TTL < time.Millisecond {
		return fmt.Errorf("assembly: ttl %s must be at least 1ms", s.TTL)
	}
	if s.Retention < 0 {
		return fmt.Errorf("assembly: retention %s is negative", s.Retention)
	}
	if s.Duplicates != LastWins && s.Duplicates != FirstWins {
		return fmt.Errorf("assembly: unknown duplicate mode %d", s.Duplicates)
	}
	return validateLimits(s.Limits)
}

// Part is one part held by an assembly.
type Part struct {
	Name  string          `json:"name"`
	Time  int64           `json:"time_ms"`
	Value json.RawMessage `json:"value"`
}

// Assembly is one emitted assembly: complete, or incomplete at its TTL.
type Assembly struct {
	ID       string
	Complete bool
	Parts    []Part   // held parts, in spec order
	Missing  []string // required parts not held, in spec order
	First    int64    // time of the first part (the TTL's base)
	Last     int64    // time of the last part accepted
	Done     int64    // completing part's time, or the deadline when expired
	Value    []byte   // the JSON value (see the package doc)
	// Evicted: an incomplete assembly OverflowEvict emitted before its
	// deadline (Done is the deadline it had); the value has "evicted":true.
	Evicted bool
}

// Output is what one call produced. Assembled and Incomplete point into
// the operator's own memory, reused by its next call: read them before
// (an Assembly's Value, Parts and Missing are the caller's to keep).
type Output struct {
	// Assembled holds the assembly this part completed, if any.
	Assembled *Assembly
	// Incomplete holds the assemblies whose TTL passed, in firing order.
	Incomplete []Assembly
	// Duplicate: the part is for an ID completed within the retention;
	// the caller writes it to the duplicate route. No state changed.
	Duplicate bool
	// DuplicatePart: the open assembly already held this part.
	DuplicatePart bool
	// Opened: the part opened a new assembly.
	Opened bool
	// Overflow: Limits refused the part (OverflowRoute); no state changed
	// and the caller writes it to the overflow route.
	Overflow *statelimit.Overflow
	// Evicted counts the assemblies OverflowEvict emitted for this part;
	// they are in Incomplete with Evicted set.
	Evicted int
}

// Held is what the store holds for one ID (the state query).
type Held struct {
	ID string `json:"id"`
	// Open: an assembly is open; Parts, First, Last, Deadline, Missing
	// describe it.
	Open     bool     `json:"open"`
	Parts    []Part   `json:"parts,omitempty"`
	Missing  []string `json:"missing,omitempty"`
	First    int64    `json:"first_ms,omitempty"`
	Last     int64    `json:"last_ms,omitempty"`
	Deadline int64    `json:"deadline_ms,omitempty"`
	// Completed: the ID completed and is remembered until RetainedUntil.
	Completed     bool  `json:"completed"`
	RetainedUntil int64 `json:"retained_until_ms,omitempty"`
}

// Operator is the assembly operator of one task. It is not safe for
// concurrent use.
//
// Errors other than *RecordError come from the store; after one, the
// store may hold part of a call's writes, so the caller must abort the
// transaction and rebuild the operator from the changelog.
type Operator struct {
	s        Spec
	index    map[string]int // part name -> position in s.Parts
	required []bool         // by part position
	nreq     int
	st       Store
	clock    int64
	open     int
	bytes    int64 // StateBytes
	kbuf     []byte
	vbuf     []byte
	// Scratch reused across calls (the hot path allocates only what it
	// hands out): quoted holds each part's name as a JSON string, by
	// position; parts backs the decoded state; held maps a part position
	// to its index in a state's parts; obuf is the emitted value under
	// construction; due holds the due timer keys of one advance.
	quoted [][]byte
	parts  []Part
	held   []int
	obuf   []byte
	due    []byte
	dueEnd []int
	tbuf   [8]byte
	fresh  [1]Part // the parts of an assembly a part opens
	// What a call hands out (Output's contract).
	assembled  Assembly
	incomplete []Assembly
	// collectDue's visitor, bound once (a closure per call would escape).
	dueFn  func(k, v []byte) bool
	dueAt  int64
	dueErr error
	// specDue: the store holds no description yet (checkSpec).
	specDue bool
}

// RecordError is a part the operator refuses; the caller sends the record
// to the dirty route with Reason.
type RecordError struct {
	Reason string
	Detail string
}

func (e *RecordError) Error() string { return e.Reason + ": " + e.Detail }

// Reasons of RecordError.
const (
	ReasonUnknownPart = "unknown_part"
	ReasonBadID       = "bad_assembly_id"
	ReasonBadValue    = "bad_part_value"
)

// New returns the operator over st, continuing from the state it holds.
func New(spec Spec, st Store) (*Operator, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("assembly: nil store")
	}
	o := &Operator{s: spec, st: st, clock: math.MinInt64, index: map[string]int{}, required: make([]bool, len(spec.Parts)),
		held: make([]int, len(spec.Parts))}
	for i, p := range spec.Parts {
		o.index[p] = i
		o.quoted = append(o.quoted, appendString(nil, p))
	}
	o.dueFn = o.visitDue
	if len(spec.Required) == 0 {
		for i := range o.required {
			o.required[i] = true
		}
	} else {
		for _, r := range spec.Required {
			o.required[o.index[r]] = true
		}
	}
	for _, r := range o.required {
		if r {
			o.nreq++
		}
	}
	if err := o.checkSpec(); err != nil {
		return nil, err
	}
	b, ok, err := st.Get(metaKey)
	if err != nil {
		return nil, fmt.Errorf("assembly: read meta: %w", err)
	}
	if ok {
		c, _, ok := opkey.ReadTime(b)
		if !ok {
			return nil, fmt.Errorf("assembly: meta: %w", errCorrupt)
		}
		o.clock = c
	}
	if err := st.Range(assemblyPrefix, func(k, v []byte) bool {
		o.open++
		o.bytes += assemblyCost(len(k)-1, len(v))
		return true
	}); err != nil {
		return nil, fmt.Errorf("assembly: count assemblies: %w", err)
	}
	return o, nil
}

// checkSpec compares the stored description with the spec's; specDue
// says it is still to be written (with the next clock).
func (o *Operator) checkSpec() error {
	if o.s.Described == nil {
		return nil
	}
	b, ok, err := o.st.Get(specKey)
	if err != nil {
		return fmt.Errorf("assembly: read spec: %w", err)
	}
	if ok && !bytes.Equal(b, o.s.Described) {
		return &SpecChangedError{Stored: bytes.Clone(b)}
	}
	o.specDue = !ok
	return nil
}

// Clock is the operator's clock, math.MinInt64 before any time.
func (o *Operator) Clock() int64 { return o.clock }

// Open is the number of open assemblies.
func (o *Operator) Open() int { return o.open }

// Process applies one part (see the package doc). t is the part's time on
// the TTL's clock; value is its JSON value.
func (o *Operator) Process(id, part string, t int64, value []byte) (Output, error) {
	var out Output
	pi, ok := o.index[part]
	switch {
	case !ok:
		return out, &RecordError{Reason: ReasonUnknownPart, Detail: fmt.Sprintf("part %q is not a part of this assembly", part)}
	case id == "":
		return out, &RecordError{Reason: ReasonBadID, Detail: "empty id"}
	case t < minTime || t > maxTime:
		return out, &RecordError{Reason: ReasonBadValue, Detail: fmt.Sprintf("time %d is out of range", t)}
	}
	_, done, err := o.st.Get(o.key(nsDone, id))
	if err != nil {
		return out, err
	}
	if done {
		out.Duplicate = true
	} else if err := o.apply(id, pi, t, value, &out); err != nil {
		return out, err
	}
	err = o.advance(t, &out)
	o.keep(&out)
	return out, err
}

// Advance moves the clock to at least c and fires what is due.
func (o *Operator) Advance(c int64) (Output, error) {
	var out Output
	err := o.advance(min(max(c, minTime), maxTime), &out)
	o.keep(&out)
	return out, err
}

// keep holds on to out.Incomplete's array for the next call.
func (o *Operator) keep(out *Output) {
	if cap(out.Incomplete) > cap(o.incomplete) {
		o.incomplete = out.Incomplete[:0]
	}
}

// addIncomplete appends a to out.Incomplete, in the operator's array.
func (o *Operator) addIncomplete(out *Output, a Assembly) {
	if out.Incomplete == nil {
		out.Incomplete = o.incomplete[:0]
	}
	out.Incomplete = append(out.Incomplete, a)
}

// Bounds of accepted times: far enough from the int64 limits that
// t + TTL and t + retention never overflow.
const (
	minTime = -(1 << 61)
	maxTime = 1 << 61
)

func (o *Operator) apply(id string, pi int, t int64, value []byte, out *Output) error {
	akey := o.key(nsAssembly, id)
	b, ok, err := o.st.Get(akey)
	if err != nil {
		return err
	}
	var a state
	if ok {
		// a aliases b, valid until the store's next write: it is encoded
		// (or emitted) before any.
		if a, err = o.decode(b); err != nil {
			return fmt.Errorf("assembly %q: %w", id, err)
		}
	} else {
		a = state{first: t, deadline: t + o.s.TTL.Milliseconds(), parts: o.fresh[:0]}
		out.Opened = true
	}
	var oldCost int64
	if ok {
		oldCost = assemblyCost(len(id), len(b))
	}
	name := o.s.Parts[pi]
	i := slices.IndexFunc(a.parts, func(p Part) bool { return p.Name == name })
	switch {
	case i >= 0:
		out.DuplicatePart = true
		if o.s.Duplicates == FirstWins {
			return nil
		}
		a.parts[i] = Part{Name: name, Time: t, Value: value}
	default:
		a.parts = append(a.parts, Part{Name: name, Time: t, Value: value})
	}
	a.last = t
	if !ok && !o.complete(a) && o.s.Limits.Enabled() {
		o.vbuf = a.append(o.vbuf[:0])
		if admitted, err := o.admit(assemblyCost(len(id), len(o.vbuf)), out); !admitted || err != nil {
			out.Opened = false
			return err
		}
	}
	if o.complete(a) {
		o.assembled = o.emit(id, a, true, false, t)
		out.Assembled = &o.assembled
		if ok {
			o.bytes -= oldCost
			o.open--
			if err := o.st.Delete(akey); err != nil {
				return err
			}
			if err := o.st.Delete(o.timerKey(a.deadline, nsAssembly, id)); err != nil {
				return err
			}
		}
		if r := o.s.Retention.Milliseconds(); r > 0 {
			o.vbuf = opkey.AppendTime(o.vbuf[:0], t+r)
			if err := o.st.Set(o.key(nsDone, id), o.vbuf); err != nil {
				return err
			}
			if err := o.st.Set(o.timerKey(t+r, nsDone, id), nil); err != nil {
				return err
			}
		}
		return nil
	}
	if !ok {
		o.open++
		if err := o.st.Set(o.timerKey(a.deadline, nsAssembly, id), nil); err != nil {
			return err
		}
	}
	o.vbuf = a.append(o.vbuf[:0])
	o.bytes += assemblyCost(len(id), len(o.vbuf)) - oldCost
	return o.st.Set(o.key(nsAssembly, id), o.vbuf)
}

func (o *Operator) complete(a state) bool {
	n := 0
	for _, p := range a.parts {
		if i, ok := o.index[p.Name]; ok && o.required[i] {
			n++
		}
	}
	return n == o.nreq
}

// advance sets the clock to max(clock, c) and fires every timer at or
// before it.
func (o *Operator) advance(c int64, out *Output) error {
	if c <= o.clock {
		return nil
	}
	o.clock = c
	if err := o.st.Set(metaKey, opkey.AppendTime(o.tbuf[:0], c)); err != nil {
		return err
	}
	if o.specDue {
		if err := o.st.Set(specKey, o.s.Described); err != nil {
			return err
		}
		o.specDue = false
	}
	if err := o.collectDue(c); err != nil {
		return err
	}
	start := 0
	for _, end := range o.dueEnd {
		k := o.due[start:end]
		start = end
		if err := o.fire(k, out); err != nil {
			return err
		}
	}
	return nil
}

// collectDue copies the keys of the timers at or before c into o.due
// (ends in o.dueEnd): the store's keys are valid only during Range.
func (o *Operator) collectDue(c int64) error {
	o.due, o.dueEnd, o.dueAt, o.dueErr = o.due[:0], o.dueEnd[:0], c, nil
	if err := o.st.Range(timerPrefix, o.dueFn); err != nil {
		return err
	}
	return o.dueErr
}

func (o *Operator) visitDue(k, _ []byte) bool {
	at, _, ok := opkey.ReadTime(k[1:])
	if !ok {
		o.dueErr = fmt.Errorf("timer key %q: %w", k, errCorrupt)
		return false
	}
	if at > o.dueAt {
		return false
	}
	o.due = append(o.due, k...)
	o.dueEnd = append(o.dueEnd, len(o.due))
	return true
}

// fire handles one due timer k: a completed marker is forgotten, an open
// assembly is emitted as incomplete and deleted.
func (o *Operator) fire(k []byte, out *Output) error {
	if len(k) < 10 {
		return fmt.Errorf("timer key %q: %w", k, errCorrupt)
	}
	at, _, _ := opkey.ReadTime(k[1:])
	kind, id := k[9], k[10:]
	if err := o.st.Delete(k); err != nil {
		return err
	}
	switch kind {
	case nsDone:
		return o.st.Delete(o.keyBytes(nsDone, id))
	case nsAssembly:
		akey := o.keyBytes(nsAssembly, id)
		b, ok, err := o.st.Get(akey)
		if err != nil || !ok {
			return err
		}
		a, err := o.decode(b)
		if err != nil {
			return fmt.Errorf("assembly %q: %w", id, err)
		}
		// Emitted before the delete: a aliases b.
		o.addIncomplete(out, o.emit(string(id), a, false, false, at))
		o.open--
		o.bytes -= assemblyCost(len(id), len(b))
		return o.st.Delete(akey)
	default:
		return fmt.Errorf("timer key %q: %w", k, errCorrupt)
	}
}

// emit builds the emitted assembly, parts in spec order. Its parts'
// values are slices of its own value (a's may alias the store). A held
// part whose name is not in the spec (state written under another spec)
// is left out.
func (o *Operator) emit(id string, a state, complete, evicted bool, done int64) Assembly {
	as := Assembly{ID: id, Complete: complete, First: a.first, Last: a.last, Done: done, Evicted: evicted}
	nheld := 0
	for i := range o.held {
		o.held[i] = -1
	}
	for j, p := range a.parts {
		if i, ok := o.index[p.Name]; ok && o.held[i] < 0 {
			o.held[i] = j
			nheld++
		}
	}
	if nmissing := o.nreq - o.heldRequired(); nmissing > 0 {
		as.Missing = make([]string, 0, nmissing)
	}
	if nheld > 0 {
		as.Parts = make([]Part, 0, nheld)
	}
	b := append(o.obuf[:0], `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"complete":`...)
	b = strconv.AppendBool(b, complete)
	b = append(b, `,"parts":{`...)
	// offsets of the parts' values in b, resolved once b is final
	type span struct{ from, to int }
	var spansArr [8]span
	spans := spansArr[:0]
	for i, j := range o.held {
		if j < 0 {
			if o.required[i] {
				as.Missing = append(as.Missing, o.s.Parts[i])
			}
			continue
		}
		p := a.parts[j]
		if len(as.Parts) > 0 {
			b = append(b, ',')
		}
		b = append(append(b, o.quoted[i]...), ':')
		from := len(b)
		if len(p.Value) == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, p.Value...)
		}
		spans = append(spans, span{from, len(b)})
		as.Parts = append(as.Parts, Part{Name: o.s.Parts[i], Time: p.Time, Value: p.Value})
	}
	b = append(b, `},"missing":[`...)
	for i, m := range as.Missing {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, o.quoted[o.index[m]]...)
	}
	b = append(b, `],"first_ms":`...)
	b = strconv.AppendInt(b, a.first, 10)
	b = append(b, `,"last_ms":`...)
	b = strconv.AppendInt(b, a.last, 10)
	b = append(b, `,"done_ms":`...)
	b = strconv.AppendInt(b, done, 10)
	if evicted {
		b = append(b, `,"evicted":true`...)
	}
	b = append(b, '}')
	o.obuf = b
	as.Value = bytes.Clone(b)
	for k := range as.Parts {
		if len(as.Parts[k].Value) > 0 {
			as.Parts[k].Value = as.Value[spans[k].from:spans[k].to:spans[k].to]
		}
	}
	return as
}

// heldRequired counts the required parts o.held marks as held.
func (o *Operator) heldRequired() int {
	n := 0
	for i, j := range o.held {
		if j >= 0 && o.required[i] {
			n++
		}
	}
	return n
}

// Held returns what the store holds for id: its open assembly and parts,
// or its completed marker. ok is false when it holds nothing.
func (o *Operator) Held(id string) (h Held, ok bool, err error) {
	h.ID = id
	b, open, err := o.st.Get(o.key(nsAssembly, id))
	if err != nil {
		return h, false, err
	}
	if open {
		a, err := o.decode(b)
		if err != nil {
			return h, false, fmt.Errorf("assembly %q: %w", id, err)
		}
		as := o.emit(id, a, false, false, 0)
		h.Open, h.Parts, h.Missing, h.First, h.Last, h.Deadline = true, as.Parts, as.Missing, a.first, a.last, a.deadline
	}
	b, done, err := o.st.Get(o.key(nsDone, id))
	if err != nil {
		return h, false, err
	}
	if done {
		until, _, ok := opkey.ReadTime(b)
		if !ok {
			return h, false, fmt.Errorf("completed marker %q: %w", id, errCorrupt)
		}
		h.Completed, h.RetainedUntil = true, until
	}
	return h, open || done, nil
}

func (o *Operator) key(ns byte, id string) []byte {
	o.kbuf = append(append(o.kbuf[:0], ns), id...)
	return o.kbuf
}

func (o *Operator) keyBytes(ns byte, id []byte) []byte {
	o.kbuf = append(append(o.kbuf[:0], ns), id...)
	return o.kbuf
}

func (o *Operator) timerKey(at int64, kind byte, id string) []byte {
	o.kbuf = opkey.AppendTime(append(o.kbuf[:0], nsTimer), at)
	o.kbuf = append(append(o.kbuf, kind), id...)
	return o.kbuf
}

// Store layout. Every key starts with a one-byte namespace; times are
// 8-byte big-endian with the sign bit flipped, so byte order is time
// order. The ID is always the key's last component, so it needs no
// escaping.
//
//	"m"                  meta: the clock
//	"s"                  the spec's description (Spec.Described), written with the first clock
//	"a" id               open assembly: first, last, deadline, parts
//	"d" id               completed marker: retained until
//	"t" time kind id     timer (empty value); kind is 'a' (deadline) or 'd' (end of retention)
const (
	nsMeta     = 'm'
	nsSpec     = 's'
	nsAssembly = 'a'
	nsDone     = 'd'
	nsTimer    = 't'
)

var (
	metaKey        = []byte{nsMeta}
	specKey        = []byte{nsSpec}
	assemblyPrefix = []byte{nsAssembly}
	timerPrefix    = []byte{nsTimer}
	errCorrupt     = errors.New("corrupt assembly state")
)

// state is one open assembly as stored.
type state struct {
	first, last, deadline int64
	parts                 []Part // in arrival order
}

func (a state) append(b []byte) []byte {
	b = binary.AppendVarint(b, a.first)
	b = binary.AppendVarint(b, a.last)
	b = binary.AppendVarint(b, a.deadline)
	b = binary.AppendUvarint(b, uint64(len(a.parts)))
	for _, p := range a.parts {
		b = binary.AppendUvarint(b, uint64(len(p.Name)))
		b = append(b, p.Name...)
		b = binary.AppendVarint(b, p.Time)
		b = binary.AppendUvarint(b, uint64(len(p.Value)))
		b = append(b, p.Value...)
	}
	return b
}

// decode decodes a stored assembly into the operator's scratch: its
// parts' values alias b and their names are the spec's strings when
// known, so decoding allocates nothing once the scratch has grown.
func (o *Operator) decode(b []byte) (state, error) {
	a, err := decodeState(b, o.parts[:0], o.s.Parts)
	if cap(a.parts) > cap(o.parts) {
		o.parts = a.parts[:0]
	}
	return a, err
}

// decodeState decodes b, appending its parts to parts. The values alias
// b; a name equal to one of names is that string (no allocation).
func decodeState(b []byte, parts []Part, names []string) (state, error) {
	a := state{parts: parts}
	var ok bool
	rv := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			ok = false
			return 0
		}
		b = b[n:]
		return v
	}
	ru := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			ok = false
			return 0
		}
		b = b[n:]
		return v
	}
	rb := func() []byte {
		n := ru()
		if !ok || n > uint64(len(b)) {
			ok = false
			return nil
		}
		v := b[:n:n]
		b = b[n:]
		return v
	}
	ok = true
	a.first, a.last, a.deadline = rv(), rv(), rv()
	n := ru()
	if !ok || n > uint64(len(b)) {
		return a, errCorrupt
	}
	for range n {
		name := rb()
		t := rv()
		v := rb()
		if !ok {
			return a, errCorrupt
		}
		a.parts = append(a.parts, Part{Name: intern(name, names), Time: t, Value: v})
	}
	if len(b) != 0 {
		return a, errCorrupt
	}
	return a, nil
}

// intern returns the string of b, one of names when equal.
func intern(b []byte, names []string) string {
	for _, n := range names {
		if n == string(b) {
			return n
		}
	}
	return string(b)
}

// ID renders an ID expression's value as the assembly ID: a non-empty
// string as is, an integral number in decimal without a fraction (so 42
// and 42.0 are one ID), any other finite number in Go's shortest form.
// Anything else (missing, null, empty, bool, object, array, NaN) is an
// error, whose record goes to the dirty route.
func ID(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", errors.New("id is missing (null)")
	case string:
		if x == "" {
			return "", errors.New("id is an empty string")
		}
		return x, nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("id %v is not a finite number", x)
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case fmt.Stringer: // json.Number
		s := x.String()
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return ID(f)
		}
		return "", fmt.Errorf("id %q is not a number", s)
	}
	return "", fmt.Errorf("id is a %T, not a string or number", v)
}
