package sideroute

import (
	"slices"
	"strconv"
	"strings"
)

// ledger is the set of redriven origins, each with the entry of the run
// that redrove it. A run redrives consecutive offsets of a partition, so
// per topic partition it keeps ranges of offsets that share one entry:
// its memory follows the number of runs and gaps, not of records, and a
// side topic of millions of redriven records costs a few ranges.
type ledger struct {
	parts map[string]*spans      // by "topic/partition"
	other map[string]ledgerEntry // keys that are no origin (written by hand)
}

func newLedger() *ledger {
	return &ledger{parts: map[string]*spans{}, other: map[string]ledgerEntry{}}
}

// splitOrigin parses "topic/partition/offset" (Origin) into its partition
// ("topic/partition") and offset.
func splitOrigin(origin string) (string, int64, bool) {
	i := strings.LastIndexByte(origin, '/')
	if i <= 0 || strings.LastIndexByte(origin[:i], '/') <= 0 {
		return "", 0, false
	}
	off, err := strconv.ParseInt(origin[i+1:], 10, 64)
	if err != nil || off < 0 || strconv.FormatInt(off, 10) != origin[i+1:] {
		return "", 0, false
	}
	return origin[:i], off, true
}

func (l *ledger) get(origin string) (ledgerEntry, bool) {
	part, off, ok := splitOrigin(origin)
	if !ok {
		e, ok := l.other[origin]
		return e, ok
	}
	if s := l.parts[part]; s != nil {
		return s.get(off)
	}
	return ledgerEntry{}, false
}

func (l *ledger) set(origin string, e ledgerEntry) {
	part, off, ok := splitOrigin(origin)
	if !ok {
		l.other[origin] = e
		return
	}
	s := l.parts[part]
	if s == nil {
		s = &spans{}
		l.parts[part] = s
	}
	s.set(off, e)
}

// del removes an origin (a tombstone in the ledger topic).
func (l *ledger) del(origin string) {
	part, off, ok := splitOrigin(origin)
	if !ok {
		delete(l.other, origin)
		return
	}
	if s := l.parts[part]; s != nil {
		s.del(off)
	}
}

// span is the offsets [lo, hi] of one partition redriven with entry e.
type span struct {
	lo, hi int64
	e      ledgerEntry
}

// spans is a sorted list of disjoint spans; two adjacent spans never have
// the same entry (they are one span then).
type spans struct{ s []span }

// find is the index of the span holding off, or where one would go.
func (s *spans) find(off int64) (int, bool) {
	i, _ := slices.BinarySearchFunc(s.s, off, func(sp span, off int64) int {
		switch {
		case sp.hi < off:
			return -1
		case sp.lo > off:
			return 1
		}
		return 0
	})
	return i, i < len(s.s) && s.s[i].lo <= off && off <= s.s[i].hi
}

func (s *spans) get(off int64) (ledgerEntry, bool) {
	if i, ok := s.find(off); ok {
		return s.s[i].e, true
	}
	return ledgerEntry{}, false
}

func (s *spans) set(off int64, e ledgerEntry) {
	// The common case: the next offset of the last span's run.
	if n := len(s.s); n > 0 && s.s[n-1].hi == off-1 && s.s[n-1].e == e {
		s.s[n-1].hi = off
		return
	}
	if cur, ok := s.get(off); ok && cur == e {
		return
	}
	s.del(off)
	i, _ := s.find(off)
	left := i > 0 && s.s[i-1].hi == off-1 && s.s[i-1].e == e
	right := i < len(s.s) && s.s[i].lo == off+1 && s.s[i].e == e
	switch {
	case left && right:
		s.s[i-1].hi = s.s[i].hi
		s.s = slices.Delete(s.s, i, i+1)
	case left:
		s.s[i-1].hi = off
	case right:
		s.s[i].lo = off
	default:
		s.s = slices.Insert(s.s, i, span{lo: off, hi: off, e: e})
	}
}

func (s *spans) del(off int64) {
	i, ok := s.find(off)
	if !ok {
		return
	}
	sp := s.s[i]
	switch {
	case sp.lo == off && sp.hi == off:
		s.s = slices.Delete(s.s, i, i+1)
	case sp.lo == off:
		s.s[i].lo++
	case sp.hi == off:
		s.s[i].hi--
	default:
		s.s[i].hi = off - 1
		s.s = slices.Insert(s.s, i+1, span{lo: off + 1, hi: sp.hi, e: sp.e})
	}
}
