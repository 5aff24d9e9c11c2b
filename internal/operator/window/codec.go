package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sidestream/sidestream/internal/operator/opkey"
)

// Store layout. Every key starts with a one-byte namespace; times are
// 8-byte big-endian with the sign bit flipped, so byte order is time
// order; group keys are escaped (0x00 -> 0x00 0xFF) and terminated by
// 0x00 0x01, so byte order is key order and no key is a prefix of another.
//
//	"m"                                 meta: version, watermark, spec fingerprint, spec description (v2)
//	"w" key start                       window: end, revision, aggregate states
//	"t" time key start                  timer (empty value): the window's next action
//	"s" source                          a source's maximum event time (aligned mode, aligned.go)
//
// A window's timer is at its end while it waits to fire (EmitUpdate and
// watermark < end) and at end+grace otherwise, so a scan of "t" up to the
// watermark finds exactly the windows to fire or purge.
const (
	nsMeta   = 'm'
	nsWindow = 'w'
	nsTimer  = 't'

	// metaV1 is the meta of older versions (no description); metaVersion
	// adds the spec's description after the fingerprint.
	metaV1      = 1
	metaVersion = 2
)

var (
	metaKey      = []byte{nsMeta}
	timerPrefix  = []byte{nsTimer}
	windowPrefix = []byte{nsWindow}
)

// errCorrupt is wrapped by every decoding error of stored state.
var errCorrupt = errors.New("corrupt window state")

func appendKey(b []byte, key string) []byte {
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			b = append(b, 0, 0xff)
		} else {
			b = append(b, key[i])
		}
	}
	return append(b, 0, 1)
}

func readKey(b []byte) (string, []byte, bool) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			out = append(out, b[i])
			continue
		}
		if i+1 >= len(b) {
			return "", nil, false
		}
		switch b[i+1] {
		case 0xff:
			out = append(out, 0)
			i++
		case 1:
			return string(out), b[i+2:], true
		default:
			return "", nil, false
		}
	}
	return "", nil, false
}

func appendWindowKey(b []byte, key string, start int64) []byte {
	return opkey.AppendTime(appendKey(append(b, nsWindow), key), start)
}

func appendWindowPrefix(b []byte, key string) []byte {
	return appendKey(append(b, nsWindow), key)
}

func appendTimerKey(b []byte, at int64, key string, start int64) []byte {
	return opkey.AppendTime(appendKey(opkey.AppendTime(append(b, nsTimer), at), key), start)
}

// timer is a parsed timer key.
type timer struct {
	at, start int64
	key       string
}

func parseTimerKey(b []byte) (timer, error) {
	var tm timer
	ok := len(b) > 0 && b[0] == nsTimer
	if ok {
		tm.at, b, ok = opkey.ReadTime(b[1:])
	}
	if ok {
		tm.key, b, ok = readKey(b)
	}
	if ok {
		tm.start, b, ok = opkey.ReadTime(b)
	}
	if !ok || len(b) != 0 {
		return tm, fmt.Errorf("%w: timer key %x", errCorrupt, b)
	}
	return tm, nil
}

// meta is the operator-wide state.
type meta struct {
	watermark   int64
	fingerprint uint64
	// described is the spec's description (Spec.Described); nil in a
	// version 1 meta, or when the spec had none.
	described []byte
}

func appendMeta(b []byte, m meta) []byte {
	b = append(b, metaVersion)
	b = binary.AppendVarint(b, m.watermark)
	b = binary.BigEndian.AppendUint64(b, m.fingerprint)
	b = binary.AppendUvarint(b, uint64(len(m.described)))
	return append(b, m.described...)
}

// decodeMeta reads a meta of either version; described aliases b.
func decodeMeta(b []byte) (meta, error) {
	var m meta
	if len(b) < 1 || (b[0] != metaV1 && b[0] != metaVersion) {
		return m, fmt.Errorf("%w: meta version", errCorrupt)
	}
	v := b[0]
	wm, n := binary.Varint(b[1:])
	if n <= 0 || len(b[1+n:]) < 8 {
		return m, fmt.Errorf("%w: meta", errCorrupt)
	}
	m.watermark = wm
	m.fingerprint = binary.BigEndian.Uint64(b[1+n:])
	rest := b[1+n+8:]
	if v == metaV1 {
		if len(rest) != 0 {
			return m, fmt.Errorf("%w: meta", errCorrupt)
		}
		return m, nil
	}
	l, k := binary.Uvarint(rest)
	if k <= 0 || uint64(len(rest[k:])) != l {
		return m, fmt.Errorf("%w: meta description", errCorrupt)
	}
	if l > 0 {
		m.described = rest[k:]
	}
	return m, nil
}

// win is one window (or session) in memory.
type win struct {
	key        string
	start, end int64
	rev        int64
	aggs       []aggState
	size       int64 // StateBytes of the stored copy, 0 when not stored
}

// encodeWindow appends the stored value of w: uvarint(end-start),
// uvarint(rev), then each aggregation's state in Spec order.
func appendWindow(b []byte, w *win, aggs []Aggregation) []byte {
	b = binary.AppendUvarint(b, uint64(w.end-w.start))
	b = binary.AppendUvarint(b, uint64(w.rev))
	for i, a := range aggs {
		st := &w.aggs[i]
		switch a.Kind {
		case Count:
			b = binary.AppendUvarint(b, uint64(st.n))
		case Sum:
			b = appendSum(b, st)
		case Min, Max:
			b = appendValue(b, st.num)
		case Avg:
			b = binary.AppendUvarint(b, uint64(st.n))
			b = appendSum(b, st)
		case First, Last:
			b = appendValue(b, st.v)
			if st.v.k != vNone {
				b = binary.AppendVarint(b, st.t)
			}
		case DistinctCount:
			b = binary.AppendUvarint(b, uint64(len(st.set)))
			for _, s := range st.set {
				b = binary.AppendUvarint(b, uint64(len(s)))
				b = append(b, s...)
			}
		}
	}
	return b
}

func appendValue(b []byte, v value) []byte {
	b = append(b, byte(v.k))
	switch v.k {
	case vInt:
		b = binary.AppendVarint(b, v.i)
	case vFloat:
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.f))
	case vString:
		b = binary.AppendUvarint(b, uint64(len(v.s)))
		b = append(b, v.s...)
	}
	return b
}

// vExact marks a stored sum with a float part: the integer part (a value),
// uvarint(n), then n partials as float64 bits. A sum without one is
// stored as its integer part alone; a vFloat sum was stored before sums
// were exact and is read as one partial.
const vExact vkind = vOther + 1

func appendSum(b []byte, st *aggState) []byte {
	if len(st.fp) == 0 {
		return appendValue(b, st.num)
	}
	b = append(b, byte(vExact))
	b = appendValue(b, st.num)
	b = binary.AppendUvarint(b, uint64(len(st.fp)))
	for _, f := range st.fp {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
	}
	return b
}

// sum reads what appendSum wrote.
func (d *decoder) sum(st *aggState) {
	if d.bad || len(d.b) == 0 || vkind(d.b[0]) != vExact {
		v := d.value()
		switch v.k {
		case vNone, vInt:
			st.num = v
		case vFloat:
			st.fp = append(st.fp[:0], v.f)
		default:
			d.bad = true
		}
		return
	}
	d.b = d.b[1:]
	st.num = d.value()
	n := d.uvarint()
	if st.num.k != vNone && st.num.k != vInt || n == 0 || n > uint64(len(d.b))/8 {
		d.bad = true
		return
	}
	st.fp = slices.Grow(st.fp[:0], int(n))[:n]
	for i := range st.fp {
		st.fp[i] = math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
	}
	if !finite(st.fp) {
		d.bad = true
	}
}

// decoder reads stored state; the first error sticks.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.bad {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64) string {
	if d.bad || uint64(len(d.b)) < n {
		d.bad = true
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) value() value {
	if d.bad || len(d.b) == 0 {
		d.bad = true
		return value{}
	}
	v := value{k: vkind(d.b[0])}
	d.b = d.b[1:]
	switch v.k {
	case vNone, vFalse, vTrue:
	case vInt:
		v.i = d.varint()
	case vFloat:
		if len(d.b) < 8 {
			d.bad = true
			return value{}
		}
		v.f = math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
	case vString:
		v.s = d.bytes(d.uvarint())
	default:
		d.bad = true
	}
	return v
}

// decodeWindow decodes a stored window; key and start come from its key.
func decodeWindow(b []byte, key string, start int64, aggs []Aggregation) (*win, error) {
	w := &win{}
	if err := decodeWindowInto(w, b, key, start, aggs); err != nil {
		return nil, err
	}
	return w, nil
}

// reset makes w an empty window of n aggregations over [start, end),
// reusing its aggregation states' memory.
func (w *win) reset(key string, start, end int64, n int) {
	aggs := w.aggs
	if cap(aggs) < n {
		aggs = make([]aggState, n)
	}
	aggs = aggs[:n]
	for i := range aggs {
		aggs[i] = aggState{fp: aggs[i].fp[:0]}
	}
	*w = win{key: key, start: start, end: end, aggs: aggs}
}

// decodeWindowInto is decodeWindow into w (reset first).
func decodeWindowInto(w *win, b []byte, key string, start int64, aggs []Aggregation) error {
	d := decoder{b: b}
	w.reset(key, start, start, len(aggs))
	w.end = start + int64(d.uvarint())
	w.rev = int64(d.uvarint())
	for i, a := range aggs {
		st := &w.aggs[i]
		switch a.Kind {
		case Count:
			st.n = int64(d.uvarint())
		case Sum:
			d.sum(st)
		case Min, Max:
			st.num = d.value()
		case Avg:
			st.n = int64(d.uvarint())
			d.sum(st)
		case First, Last:
			st.v = d.value()
			if st.v.k != vNone {
				st.t = d.varint()
			}
		case DistinctCount:
			n := d.uvarint()
			if n > uint64(len(d.b)) { // each entry takes at least one byte
				d.bad = true
			}
			if !d.bad {
				st.set = make([]string, n)
				for j := range st.set {
					st.set[j] = d.bytes(d.uvarint())
				}
			}
		}
	}
	if d.bad || len(d.b) != 0 || w.end <= w.start || w.rev < 0 {
		return fmt.Errorf("%w: window %q@%d", errCorrupt, key, start)
	}
	return nil
}

// decodeWindowHeader reads only end and revision (session lookups).
func decodeWindowHeader(b []byte, start int64) (end, rev int64, err error) {
	d := decoder{b: b}
	end = start + int64(d.uvarint())
	rev = int64(d.uvarint())
	if d.bad || end <= start {
		return 0, 0, fmt.Errorf("%w: window header at %d", errCorrupt, start)
	}
	return end, rev, nil
}
