package window

// The oracle: a brute-force reference written from the semantics in
// doc.go, sharing no code with the operator. It keeps every accepted
// record, recomputes sessions from scratch (sort + sweep) and aggregates
// from the member records on every emission.

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// op is one call: a record (Process) or an idle advance (AdvanceWatermark).
type op struct {
	advance bool
	to      int64 // advance
	key     string
	t       int64
	vals    []any
}

func (o op) String() string {
	if o.advance {
		return fmt.Sprintf("advance(%d)", o.to)
	}
	return fmt.Sprintf("rec(%q,%d,%v)", o.key, o.t, o.vals)
}

// expResult is an emitted result in comparable form: aggregates decoded,
// numbers as float64.
type expResult struct {
	Key        string
	Start, End int64
	Revision   int64
	Final      bool
	Retract    bool
	Aggs       map[string]any
}

// expOut is what one op produced.
type expOut struct {
	Dirty   bool
	Late    *Late
	Results []expResult
}

type oRec struct {
	idx  int
	key  string
	t    int64
	vals []any
}

type oWin struct {
	key        string
	start, end int64
	members    []oRec // fixed windows: members; sessions: see oSession
	rev        int64
	fired      bool
}

type oSession struct {
	members []oRec
	rev     int64
	fired   bool
}

func (s *oSession) span(gap int64) (int64, int64) {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range s.members {
		lo, hi = min(lo, r.t), max(hi, r.t+gap)
	}
	return lo, hi
}

type oracle struct {
	spec                       Spec
	size, adv, gap, ooo, grace int64
	wm                         int64
	fixed                      map[string]*oWin // live fixed windows by "key\x00start"
	sessions                   map[string][]*oSession
	n                          int
}

func newOracle(s Spec) *oracle {
	o := &oracle{spec: s, wm: math.MinInt64, fixed: map[string]*oWin{}, sessions: map[string][]*oSession{}}
	o.size, o.adv, o.gap = s.Size.Milliseconds(), s.Advance.Milliseconds(), s.Gap.Milliseconds()
	if s.Kind == Tumbling {
		o.adv = o.size
	}
	o.ooo, o.grace = s.MaxOutOfOrderness.Milliseconds(), s.Grace.Milliseconds()
	return o
}

func isNum(v any) bool {
	switch v.(type) {
	case int, int64, float64:
		return true
	}
	return false
}

func isScalar(v any) bool {
	switch v.(type) {
	case int, int64, float64, string, bool:
		return true
	}
	return false
}

func toF(v any) float64 {
	switch v := v.(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case float64:
		return v
	}
	panic(fmt.Sprintf("not a number: %T", v))
}

// valid applies the input rules: numeric aggregations take numbers or nil,
// first/last/distinct take scalars or nil, count takes anything.
func (o *oracle) valid(vals []any) bool {
	if len(vals) != len(o.spec.Aggregations) {
		return false
	}
	for i, a := range o.spec.Aggregations {
		v := vals[i]
		if v == nil {
			continue
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return false
		}
		switch a.Kind {
		case Sum, Min, Max, Avg:
			if !isNum(v) {
				return false
			}
		case First, Last, DistinctCount:
			if !isScalar(v) {
				return false
			}
		}
	}
	return true
}

func (o *oracle) aggregates(members []oRec) map[string]any {
	out := map[string]any{}
	for i, a := range o.spec.Aggregations {
		var vals []any
		var recs []oRec
		for _, r := range members {
			if r.vals[i] != nil {
				vals = append(vals, r.vals[i])
				recs = append(recs, r)
			}
		}
		switch a.Kind {
		case Count:
			out[a.Name] = float64(len(vals))
		case Sum, Avg:
			if len(vals) == 0 {
				out[a.Name] = nil
				continue
			}
			// The exact sum, rounded once: the result must not depend
			// on the order values were added in.
			exact := new(big.Float).SetPrec(4096)
			for _, v := range vals {
				exact.Add(exact, new(big.Float).SetFloat64(toF(v)))
			}
			s, _ := exact.Float64()
			if a.Kind == Avg {
				s /= float64(len(vals))
			}
			out[a.Name] = s
		case Min, Max:
			if len(vals) == 0 {
				out[a.Name] = nil
				continue
			}
			m := toF(vals[0])
			for _, v := range vals[1:] {
				if a.Kind == Min {
					m = min(m, toF(v))
				} else {
					m = max(m, toF(v))
				}
			}
			out[a.Name] = m
		case First, Last:
			if len(recs) == 0 {
				out[a.Name] = nil
				continue
			}
			best := recs[0]
			for _, r := range recs[1:] {
				// Ties between equal event times go by value, never by
				// arrival: first takes the least, last the greatest.
				c := oracleOrder(r.vals[i], best.vals[i])
				if a.Kind == First && (r.t < best.t || r.t == best.t && c < 0) {
					best = r
				}
				if a.Kind == Last && (r.t > best.t || r.t == best.t && c > 0) {
					best = r
				}
			}
			out[a.Name] = normVal(best.vals[i])
		case DistinctCount:
			set := map[string]bool{}
			for _, v := range vals {
				if isNum(v) {
					set["n"+strconv.FormatFloat(toF(v), 'g', -1, 64)] = true
				} else {
					set[fmt.Sprintf("%T:%v", v, v)] = true
				}
			}
			out[a.Name] = float64(len(set))
		}
	}
	return out
}

// oracleOrder orders the scalars the generator makes: false < true <
// numbers (by value, then int before float) < strings.
func oracleOrder(a, b any) int {
	rank := func(v any) int {
		switch v := v.(type) {
		case bool:
			if v {
				return 1
			}
			return 0
		case string:
			return 3
		}
		return 2
	}
	if d := rank(a) - rank(b); d != 0 {
		return d
	}
	switch a := a.(type) {
	case string:
		return strings.Compare(a, b.(string))
	case bool:
		return 0
	}
	if fa, fb := toF(a), toF(b); fa != fb {
		if fa < fb {
			return -1
		}
		return 1
	}
	_, af := a.(float64)
	_, bf := b.(float64)
	switch {
	case af == bf:
		return 0
	case af:
		return 1
	}
	return -1
}

func normVal(v any) any {
	if isNum(v) {
		return toF(v)
	}
	return v
}

// step runs one op and returns what the operator must produce.
func (o *oracle) step(p op) expOut {
	var out expOut
	if p.advance {
		if p.to > o.wm {
			out.Results = o.advanceTo(p.to)
		}
		sortExp(out.Results)
		return out
	}
	if p.t < MinEventTime || p.t > MaxEventTime || !o.valid(p.vals) {
		out.Dirty = true
		return out
	}
	r := oRec{idx: o.n, key: p.key, t: p.t, vals: p.vals}
	o.n++
	if o.spec.Kind == Session {
		out = o.session(r)
	} else {
		out = o.fixedWin(r)
	}
	if out.Late != nil {
		return out
	}
	if nw := p.t - o.ooo; nw > o.wm {
		out.Results = append(out.Results, o.advanceTo(nw)...)
	}
	sortExp(out.Results)
	return out
}

func (o *oracle) fixedWin(r oRec) expOut {
	var out expOut
	var all []Span
	for k := (r.t-o.size)/o.adv - 2; k <= r.t/o.adv+2; k++ {
		s := k * o.adv
		if s <= r.t && r.t < s+o.size {
			all = append(all, Span{s, s + o.size})
		}
	}
	var open []Span
	for _, w := range all {
		if w.End+o.grace > o.wm {
			open = append(open, w)
		}
	}
	if len(open) == 0 {
		maxEnd := all[len(all)-1].End
		out.Late = &Late{Watermark: o.wm, Windows: all, LateBy: o.wm - (maxEnd + o.grace)}
		return out
	}
	for _, sp := range open {
		id := fmt.Sprintf("%s\x00%d", r.key, sp.Start)
		w := o.fixed[id]
		if w == nil {
			w = &oWin{key: r.key, start: sp.Start, end: sp.End}
			o.fixed[id] = w
		}
		w.members = append(w.members, r)
		if o.spec.Emit == EmitUpdate && o.wm >= w.end {
			w.rev++
			w.fired = true
			out.Results = append(out.Results, o.res(r.key, w.start, w.end, w.rev, false, w.members))
		}
	}
	return out
}

func (o *oracle) res(key string, start, end, rev int64, final bool, members []oRec) expResult {
	return expResult{Key: OutputKey(key, start), Start: start, End: end, Revision: rev, Final: final, Aggs: o.aggregates(members)}
}

// components sorts records by time and sweeps them into sessions.
func (o *oracle) components(recs []oRec) [][]oRec {
	recs = slices.Clone(recs)
	slices.SortStableFunc(recs, func(a, b oRec) int { return cmp.Compare(a.t, b.t) })
	var out [][]oRec
	var end int64
	for _, r := range recs {
		if len(out) > 0 && r.t <= end {
			out[len(out)-1] = append(out[len(out)-1], r)
			end = max(end, r.t+o.gap)
			continue
		}
		out = append(out, []oRec{r})
		end = r.t + o.gap
	}
	return out
}

func (o *oracle) session(r oRec) expOut {
	var out expOut
	live := o.sessions[r.key]
	var recs []oRec
	for _, s := range live {
		recs = append(recs, s.members...)
	}
	recs = append(recs, r)
	var mine []oRec
	for _, c := range o.components(recs) {
		if slices.ContainsFunc(c, func(x oRec) bool { return x.idx == r.idx }) {
			mine = c
		}
	}
	if len(mine) == 1 && r.t+o.gap+o.grace <= o.wm {
		out.Late = &Late{Watermark: o.wm, Windows: []Span{{r.t, r.t + o.gap}}, LateBy: o.wm - (r.t + o.gap + o.grace)}
		return out
	}
	ns := &oSession{members: mine}
	start, end := ns.span(o.gap)
	var keep []*oSession
	for _, s := range live {
		absorbed := slices.ContainsFunc(mine, func(x oRec) bool { return x.idx == s.members[0].idx })
		if !absorbed {
			keep = append(keep, s)
			continue
		}
		ns.rev = max(ns.rev, s.rev)
		ss, se := s.span(o.gap)
		if s.rev > 0 && ss != start {
			out.Results = append(out.Results, expResult{Key: OutputKey(r.key, ss), Start: ss, End: se, Revision: s.rev + 1, Retract: true})
		}
	}
	if o.spec.Emit == EmitUpdate && o.wm >= end {
		ns.rev++
		ns.fired = true
		out.Results = append(out.Results, o.res(r.key, start, end, ns.rev, false, mine))
	}
	o.sessions[r.key] = append(keep, ns)
	return out
}

func (o *oracle) advanceTo(wm int64) []expResult {
	o.wm = wm
	var out []expResult
	update := o.spec.Emit == EmitUpdate
	for id, w := range o.fixed {
		switch {
		case o.wm >= w.end+o.grace:
			w.rev++
			out = append(out, o.res(w.key, w.start, w.end, w.rev, true, w.members))
			delete(o.fixed, id)
		case update && o.wm >= w.end && !w.fired:
			w.fired = true
			w.rev++
			out = append(out, o.res(w.key, w.start, w.end, w.rev, false, w.members))
		}
	}
	for key, ss := range o.sessions {
		var keep []*oSession
		for _, s := range ss {
			start, end := s.span(o.gap)
			switch {
			case o.wm >= end+o.grace:
				s.rev++
				out = append(out, o.res(key, start, end, s.rev, true, s.members))
				continue
			case update && o.wm >= end && !s.fired:
				s.fired = true
				s.rev++
				out = append(out, o.res(key, start, end, s.rev, false, s.members))
			}
			keep = append(keep, s)
		}
		o.sessions[key] = keep
	}
	return out
}

func groupKeyOf(outKey string) string {
	i := len(outKey) - 1
	for outKey[i] != '@' {
		i--
	}
	return outKey[:i]
}

func sortExp(rs []expResult) {
	slices.SortFunc(rs, func(a, b expResult) int {
		return cmp.Or(cmp.Compare(a.End, b.End), cmp.Compare(groupKeyOf(a.Key), groupKeyOf(b.Key)), cmp.Compare(a.Start, b.Start))
	})
}
