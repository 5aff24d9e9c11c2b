package assembly

// The oracle: a brute-force reference written from the semantics in
// doc.go, sharing no code with the operator: maps instead of a store, a
// full scan of every assembly and marker on each clock advance, and the
// expected value built with encoding/json.

import (
	"cmp"
	"math"
	"slices"
)

type oPart struct {
	t int64
	v string
}

type oAsm struct {
	first, last, deadline int64
	parts                 map[string]oPart
}

type oracle struct {
	s     Spec
	clock int64
	open  map[string]*oAsm
	done  map[string]int64 // id -> retained until
}

func newOracle(s Spec) *oracle {
	return &oracle{s: s, clock: math.MinInt64, open: map[string]*oAsm{}, done: map[string]int64{}}
}

// expAsm is an emitted assembly in comparable form.
type expAsm struct {
	ID       string
	Complete bool
	Parts    map[string]string // name -> value
	Order    []string          // names in spec order
	Missing  []string
	First    int64
	Last     int64
	Done     int64
}

type expOut struct {
	Err           bool
	Duplicate     bool
	DuplicatePart bool
	Opened        bool
	Assembled     *expAsm
	Incomplete    []expAsm
}

func (o *oracle) required() []string {
	if len(o.s.Required) > 0 {
		return o.s.Required
	}
	return o.s.Parts
}

func (o *oracle) emit(id string, a *oAsm, complete bool, done int64) expAsm {
	e := expAsm{ID: id, Complete: complete, Parts: map[string]string{}, First: a.first, Last: a.last, Done: done}
	for _, p := range o.s.Parts {
		if v, ok := a.parts[p]; ok {
			e.Parts[p] = v.v
			e.Order = append(e.Order, p)
		} else if slices.Contains(o.required(), p) {
			e.Missing = append(e.Missing, p)
		}
	}
	return e
}

func (o *oracle) process(id, part string, t int64, v string) expOut {
	var out expOut
	if !slices.Contains(o.s.Parts, part) || id == "" {
		out.Err = true
		return out
	}
	if _, ok := o.done[id]; ok {
		out.Duplicate = true
	} else {
		a := o.open[id]
		if a == nil {
			a = &oAsm{first: t, deadline: t + o.s.TTL.Milliseconds(), parts: map[string]oPart{}}
			o.open[id] = a
			out.Opened = true
		}
		_, had := a.parts[part]
		out.DuplicatePart = had
		if !had || o.s.Duplicates == LastWins {
			a.parts[part] = oPart{t: t, v: v}
			a.last = t
			all := true
			for _, r := range o.required() {
				if _, ok := a.parts[r]; !ok {
					all = false
				}
			}
			if all {
				e := o.emit(id, a, true, t)
				out.Assembled = &e
				delete(o.open, id)
				if r := o.s.Retention.Milliseconds(); r > 0 {
					o.done[id] = t + r
				}
			}
		}
	}
	out.Incomplete = o.advance(t)
	return out
}

func (o *oracle) advance(c int64) []expAsm {
	if c <= o.clock {
		return nil
	}
	o.clock = c
	type timer struct {
		at   int64
		kind byte
		id   string
	}
	var due []timer
	for id, a := range o.open {
		if a.deadline <= c {
			due = append(due, timer{a.deadline, 'a', id})
		}
	}
	for id, until := range o.done {
		if until <= c {
			due = append(due, timer{until, 'd', id})
		}
	}
	slices.SortFunc(due, func(x, y timer) int {
		return cmp.Or(cmp.Compare(x.at, y.at), cmp.Compare(x.kind, y.kind), cmp.Compare(x.id, y.id))
	})
	var out []expAsm
	for _, d := range due {
		if d.kind == 'd' {
			delete(o.done, d.id)
			continue
		}
		out = append(out, o.emit(d.id, o.open[d.id], false, d.at))
		delete(o.open, d.id)
	}
	return out
}
