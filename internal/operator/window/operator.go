package window

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sidestream/sidestream/internal/operator/opkey"
)

// Store is what the operator needs from a state store;
// changelog.Store satisfies it. See changelog.Store for the contract.
type Store interface {
	Get(key []byte) ([]byte, bool, error)
	Set(key, value []byte) error
	Delete(key []byte) error
	Range(prefix []byte, fn func(key, value []byte) bool) error
}

// ErrSpecChanged means the store holds state written under a different
// Spec; it cannot be reinterpreted. Reset the state (a new application id
// or a deleted changelog) to change a window's spec. New returns it
// wrapped in a *SpecChangedError.
var ErrSpecChanged = errors.New("window: store was written with a different spec")

// SpecChangedError is New's error for a store written under another
// spec: Stored is the description the store holds (Spec.Described), nil
// when it holds only the fingerprint (written by an older version).
type SpecChangedError struct {
	Stored []byte
}

func (e *SpecChangedError) Error() string { return ErrSpecChanged.Error() }
func (e *SpecChangedError) Unwrap() error { return ErrSpecChanged }

// StoredSpec is the description the store holds (nil: none).
func (e *SpecChangedError) StoredSpec() []byte { return e.Stored }

// Operator is the window operator of one task. It is not safe for
// concurrent use.
//
// Errors other than *RecordError come from the store; after one, the
// store may hold part of a call's writes, so the caller must abort the
// transaction and rebuild the operator from the changelog.
type Operator struct {
	p     params
	st    Store
	wm    int64
	open  int
	bytes int64 // StateBytes

	// Aligned sources (aligned.go): each source's maximum event time, the
	// sources named by SetSources, and the last minimum over them.
	srcs     map[string]int64
	expected []string
	idle     map[string]bool
	low      int64
	lowOK    bool

	in []value // normalized inputs of the current record
	// processFixed's windows of the current record, and the windows it
	// decodes into (none outlives the call: results copy what they show).
	targets []fixedTarget
	wins    []*win
	kbuf    []byte // scratch keys
	pbuf    []byte // scratch prefix (sessions)
	vbuf    []byte // scratch values

	// Deferred writes (batch.go): between BeginBatch and Flush, whether
	// the watermark and which sources' progress changed, not yet stored.
	batch     bool
	metaDirty bool
	dirty     map[string]bool
	dirtySrcs []string // Flush's scratch
}

// New returns the operator over st. A fresh store starts with no
// watermark (math.MinInt64); a restored store continues from its state.
func New(spec Spec, st Store) (*Operator, error) {
	p, err := spec.compile()
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("window: nil store")
	}
	o := &Operator{p: p, st: st, wm: math.MinInt64, in: make([]value, len(p.aggs))}
	b, ok, err := st.Get(metaKey)
	if err != nil {
		return nil, fmt.Errorf("window: read meta: %w", err)
	}
	if ok {
		m, err := decodeMeta(b)
		if err != nil {
			return nil, err
		}
		if !sameSpec(m, p) {
			return nil, &SpecChangedError{Stored: bytes.Clone(m.described)}
		}
		o.wm = m.watermark
	}
	if err := st.Range(windowPrefix, func(k, v []byte) bool {
		o.open++
		o.bytes += windowCost(len(k), len(v))
		return true
	}); err != nil {
		return nil, fmt.Errorf("window: count windows: %w", err)
	}
	if err := o.loadSources(); err != nil {
		return nil, err
	}
	return o, nil
}

// sameSpec reports whether state with meta m is readable under p: by
// their descriptions when both have one (what the layout depends on;
// a fingerprint may differ in what it does not, max_out_of_orderness),
// else by the fingerprint.
func sameSpec(m meta, p params) bool {
	if m.described != nil && p.described != nil {
		return bytes.Equal(m.described, p.described)
	}
	return m.fingerprint == p.fingerprint
}

// Watermark is the current watermark, math.MinInt64 before any.
func (o *Operator) Watermark() int64 { return o.wm }

// OpenWindows is the number of windows (sessions) in the store.
func (o *Operator) OpenWindows() int { return o.open }

// Process applies one record: key is the group key, eventTime in epoch
// ms, vals one value per aggregation (nil is skipped; numbers as any Go
// integer or float type or json.Number). It then advances the watermark
// by the record's event time and fires or purges what is due.
func (o *Operator) Process(key string, eventTime int64, vals []any) (Output, error) {
	out, err := o.apply1(key, eventTime, vals, o.wm)
	if err != nil || out.Late != nil {
		return out, err
	}
	if err := o.advance(eventTime-o.p.ooo, &out); err != nil {
		return out, err
	}
	sortResults(out.Results)
	return out, nil
}

// apply1 validates one record and applies it, judging which of its
// windows are purged (and whether it is late) by the watermark judge.
func (o *Operator) apply1(key string, eventTime int64, vals []any, judge int64) (Output, error) {
	if eventTime < MinEventTime || eventTime > MaxEventTime {
		return Output{}, &RecordError{Reason: ReasonEventTime, Detail: fmt.Sprintf("event time %d is outside [%d, %d]", eventTime, MinEventTime, MaxEventTime)}
	}
	if len(vals) != len(o.p.aggs) {
		return Output{}, &RecordError{Reason: ReasonValueCount, Detail: fmt.Sprintf("%d values for %d aggregations", len(vals), len(o.p.aggs))}
	}
	for i, x := range vals {
		v, ok := normalize(x)
		if !ok {
			return Output{}, &RecordError{Reason: ReasonNonFinite, Aggregate: o.p.aggs[i].Name, Detail: fmt.Sprintf("%v is not a finite number", x)}
		}
		if r := check(o.p.aggs[i].Kind, v); r != "" {
			return Output{}, &RecordError{Reason: r, Aggregate: o.p.aggs[i].Name, Detail: fmt.Sprintf("%s cannot aggregate a %T", o.p.aggs[i].Kind, x)}
		}
		o.in[i] = v
	}
	var out Output
	var err error
	if o.p.kind == Session {
		err = o.processSession(key, eventTime, judge, &out)
	} else {
		err = o.processFixed(key, eventTime, judge, &out)
	}
	clear(o.in)
	return out, err
}

// AdvanceWatermark raises the watermark to at least to (idle advance: the
// caller computes it from wall-clock time, the one documented source of
// non-determinism) and fires or purges what is due. A lower value is a
// no-op; values above 2^61 are capped there (every window is purged long
// before). Errors come only from the store.
func (o *Operator) AdvanceWatermark(to int64) (Output, error) {
	var out Output
	err := o.advance(min(to, maxWatermark), &out)
	sortResults(out.Results)
	return out, err
}

func sortResults(rs []Result) {
	slices.SortStableFunc(rs, func(a, b Result) int {
		return cmp.Or(cmp.Compare(a.End, b.End), cmp.Compare(a.GroupKey, b.GroupKey), cmp.Compare(a.Start, b.Start))
	})
}

// timerAt is where a window's timer belongs at the current watermark.
func (o *Operator) timerAt(end int64) int64 {
	if o.p.emit == EmitUpdate && o.wm < end {
		return end
	}
	return end + o.p.grace
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func (o *Operator) apply(w *win, t int64) error {
	for i, a := range o.p.aggs {
		if !w.aggs[i].apply(a.Kind, o.in[i], t) {
			return &RecordError{Reason: ReasonAggOverflow, Aggregate: a.Name, Detail: fmt.Sprintf("window %s would not be finite", OutputKey(w.key, w.start))}
		}
	}
	return nil
}

func (o *Operator) load(key string, start int64) (*win, bool, error) {
	o.kbuf = appendWindowKey(o.kbuf[:0], key, start)
	b, ok, err := o.st.Get(o.kbuf)
	if err != nil || !ok {
		return nil, false, err
	}
	w, err := decodeWindow(b, key, start, o.p.aggs)
	if err == nil {
		w.size = windowCost(len(o.kbuf), len(b))
	}
	return w, true, err
}

// loadFixed is load into processFixed's j-th window.
func (o *Operator) loadFixed(j int, key string, start int64) (*win, bool, error) {
	o.kbuf = appendWindowKey(o.kbuf[:0], key, start)
	b, ok, err := o.st.Get(o.kbuf)
	if err != nil || !ok {
		return nil, false, err
	}
	w := o.fixedWin(j)
	if err := decodeWindowInto(w, b, key, start, o.p.aggs); err != nil {
		return nil, true, err
	}
	w.size = windowCost(len(o.kbuf), len(b))
	return w, true, nil
}

// fixedWin is processFixed's j-th window, kept from record to record.
func (o *Operator) fixedWin(j int) *win {
	for len(o.wins) <= j {
		o.wins = append(o.wins, &win{})
	}
	return o.wins[j]
}

type fixedTarget struct {
	w     *win
	isNew bool
}

func (o *Operator) save(w *win) error {
	o.kbuf = appendWindowKey(o.kbuf[:0], w.key, w.start)
	o.vbuf = appendWindow(o.vbuf[:0], w, o.p.aggs)
	c := windowCost(len(o.kbuf), len(o.vbuf))
	o.bytes += c - w.size
	w.size = c
	return o.st.Set(o.kbuf, o.vbuf)
}

func (o *Operator) setTimer(at int64, w *win) error {
	o.kbuf = appendTimerKey(o.kbuf[:0], at, w.key, w.start)
	return o.st.Set(o.kbuf, nil)
}

// takeTimer loads the window a due timer belongs to and deletes the
// timer; the window must exist.
func (o *Operator) takeTimer(tm timer) (*win, error) {
	w, ok, err := o.load(tm.key, tm.start)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: timer for missing window %q@%d", errCorrupt, tm.key, tm.start)
	}
	return w, o.deleteTimer(tm.at, tm.key, tm.start)
}

func (o *Operator) deleteTimer(at int64, key string, start int64) error {
	o.kbuf = appendTimerKey(o.kbuf[:0], at, key, start)
	return o.st.Delete(o.kbuf)
}

// processFixed handles tumbling and hopping windows: the record belongs
// to every window whose start is a multiple of advance in (t-size, t].
//
// judge is the watermark that decides which windows are purged: the
// task's own, or (aligned sources) the record's source's, never below the
// task's.
func (o *Operator) processFixed(key string, t, judge int64, out *Output) error {
	size, adv := o.p.size, o.p.advance
	last := floorDiv(t, adv) * adv
	first := -floorDiv(-(t-size+1), adv) * adv
	targets := o.targets[:0]
	defer func() { clear(targets); o.targets = targets[:0] }()
	for s := first; s <= last; s += adv {
		if s+size+o.p.grace <= judge {
			continue // purged
		}
		w, ok, err := o.loadFixed(len(targets), key, s)
		if err != nil {
			return err
		}
		if !ok {
			w = o.fixedWin(len(targets))
			w.reset(key, s, s+size, len(o.p.aggs))
		}
		if err := o.apply(w, t); err != nil {
			return err
		}
		targets = append(targets, fixedTarget{w, !ok})
	}
	if len(targets) == 0 {
		l := &Late{Watermark: judge, LateBy: judge - (last + size + o.p.grace)}
		for s := first; s <= last; s += adv {
			l.Windows = append(l.Windows, Span{s, s + size})
		}
		out.Late = l
		return nil
	}
	if o.p.lim.Enabled() {
		var add int
		var addBytes int64
		for _, tg := range targets {
			if tg.isNew {
				add++
			}
			addBytes += o.cost(tg.w) - tg.w.size
		}
		keep := func(k string, s int64) bool {
			return k == key && slices.ContainsFunc(targets, func(tg fixedTarget) bool { return !tg.isNew && tg.w.start == s })
		}
		if ok, err := o.admit(add, addBytes, keep, len(targets), out); !ok || err != nil {
			return err
		}
	}
	for _, tg := range targets {
		w := tg.w
		if o.p.emit == EmitUpdate && o.wm >= w.end {
			w.rev++
			out.Results = append(out.Results, o.result(w, false))
		}
		if err := o.save(w); err != nil {
			return err
		}
		if tg.isNew {
			o.open++
			if err := o.setTimer(o.timerAt(w.end), w); err != nil {
				return err
			}
		}
	}
	return nil
}

// sessionPart is an open session a new record's session overlaps or
// touches: it merges into one.
type sessionPart struct{ start, end, rev, size int64 }

// processSession merges the record's session [t, t+gap) with every open
// session of key it overlaps or touches.
func (o *Operator) processSession(key string, t, judge int64, out *Output) error {
	lo, hi := t, t+o.p.gap
	comps, err := o.touchingSessions(key, lo, hi)
	if err != nil {
		return err
	}
	if len(comps) == 0 && hi+o.p.grace <= judge {
		out.Late = &Late{Watermark: judge, Windows: []Span{{lo, hi}}, LateBy: judge - (hi + o.p.grace)}
		return nil
	}
	m := &win{key: key, start: lo, end: hi, aggs: make([]aggState, len(o.p.aggs))}
	for i, c := range comps {
		w, ok, err := o.load(key, c.start)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: session %q@%d vanished", errCorrupt, key, c.start)
		}
		m.start, m.end, m.rev = min(m.start, w.start), max(m.end, w.end), max(m.rev, w.rev)
		comps[i].size = w.size
		for i, a := range o.p.aggs {
			if !m.aggs[i].merge(a.Kind, w.aggs[i]) {
				return &RecordError{Reason: ReasonAggOverflow, Aggregate: a.Name, Detail: "merged session would not be finite"}
			}
		}
	}
	if err := o.apply(m, t); err != nil {
		return err
	}
	if len(comps) == 0 && o.p.lim.Enabled() {
		if ok, err := o.admit(1, o.cost(m), nil, 0, out); !ok || err != nil {
			return err
		}
	}
	if err := o.replaceSessions(key, comps, m, out); err != nil {
		return err
	}
	if o.p.emit == EmitUpdate && o.wm >= m.end {
		m.rev++
		out.Results = append(out.Results, o.result(m, false))
	}
	if err := o.save(m); err != nil {
		return err
	}
	return o.setTimer(o.timerAt(m.end), m)
}

// touchingSessions lists key's open sessions that overlap or touch
// [lo, hi].
func (o *Operator) touchingSessions(key string, lo, hi int64) ([]sessionPart, error) {
	var comps []sessionPart
	var rerr error
	o.pbuf = appendWindowPrefix(o.pbuf[:0], key)
	prefix := o.pbuf
	err := o.st.Range(prefix, func(k, v []byte) bool {
		start, _, ok := opkey.ReadTime(k[len(prefix):])
		if !ok {
			rerr = fmt.Errorf("%w: session key %x", errCorrupt, k)
			return false
		}
		if start > hi {
			return false // sessions are ordered by start and never touch
		}
		end, rev, err := decodeWindowHeader(v, start)
		if err != nil {
			rerr = err
			return false
		}
		if end >= lo {
			comps = append(comps, sessionPart{start, end, rev, 0})
		}
		return true
	})
	if err == nil {
		err = rerr
	}
	return comps, err
}

// replaceSessions removes the merged sessions but the one m keeps the
// start of, retracting those that had emitted results.
func (o *Operator) replaceSessions(key string, comps []sessionPart, m *win, out *Output) error {
	kept := false
	for _, c := range comps {
		o.bytes -= c.size // m, saved below, is counted whole
		if err := o.deleteTimer(o.timerAt(c.end), key, c.start); err != nil {
			return err
		}
		if c.start == m.start {
			kept = true
			continue
		}
		o.kbuf = appendWindowKey(o.kbuf[:0], key, c.start)
		if err := o.st.Delete(o.kbuf); err != nil {
			return err
		}
		o.open--
		if c.rev > 0 {
			out.Results = append(out.Results, Result{
				Key: OutputKey(key, c.start), GroupKey: key,
				Start: c.start, End: c.end, Revision: c.rev + 1, Retract: true,
			})
		}
	}
	if !kept {
		o.open++
	}
	return nil
}

// advance raises the watermark to to and runs every due timer: windows
// whose end+grace the watermark reached are purged (their final result
// emitted), windows whose end it reached fire (EmitUpdate).
func (o *Operator) advance(to int64, out *Output) error {
	if to <= o.wm {
		return nil
	}
	prev := o.wm
	o.wm = to
	if err := o.writeMeta(); err != nil {
		return err
	}
	var due []timer
	var perr error
	scan := func(k, _ []byte) bool {
		tm, err := parseTimerKey(k)
		if err != nil {
			perr = err
			return false
		}
		if tm.at > o.wm {
			return false
		}
		due = append(due, tm)
		return true
	}
	// Every live timer is past the previous watermark (a timer is always
	// set after it), so a store that can seek starts there, above the
	// deleted timers of earlier advances.
	var err error
	if sk, ok := o.st.(interface {
		RangeFrom(prefix, start []byte, fn func(key, value []byte) bool) error
	}); ok && prev > math.MinInt64 {
		o.pbuf = opkey.AppendTime(append(o.pbuf[:0], nsTimer), prev+1)
		err = sk.RangeFrom(timerPrefix, o.pbuf, scan)
	} else {
		err = o.st.Range(timerPrefix, scan)
	}
	if err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	for _, tm := range due {
		w, err := o.takeTimer(tm)
		if err != nil {
			return err
		}
		w.rev++
		if o.wm >= w.end+o.p.grace {
			out.Results = append(out.Results, o.result(w, true))
			o.kbuf = appendWindowKey(o.kbuf[:0], w.key, w.start)
			if err := o.st.Delete(o.kbuf); err != nil {
				return err
			}
			o.open--
			o.bytes -= w.size
			continue
		}
		// A fire timer (EmitUpdate, at end): emit, then wait for the purge.
		out.Results = append(out.Results, o.result(w, false))
		if err := o.save(w); err != nil {
			return err
		}
		if err := o.setTimer(w.end+o.p.grace, w); err != nil {
			return err
		}
	}
	return nil
}
