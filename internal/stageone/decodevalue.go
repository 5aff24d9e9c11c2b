package stageone

import (
	"bytes"

	"github.com/sidestream/sidestream/internal/plan"

	"github.com/tidwall/gjson"

	"github.com/sidestream/sidestream/internal/registry"
)

// span is a referenced top-level member the scan found: its field number
// and its value's bytes, decoded once the whole value is known valid.
type span struct {
	field int
	raw   []byte
}

// fieldValue is a member value of a valid JSON object for expressions,
// as jsonValue(gjson.ParseBytes(raw)) gives it, without copying raw to
// parse it: strings (interned when short), literals and integers are
// read from the bytes; objects and arrays go to compositeValue.
func (out *Decoded) fieldValue(raw []byte) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		s := raw[1 : len(raw)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			return gjson.ParseBytes(raw).Str, nil
		}
		return out.str(s), nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	case '{', '[':
		return compositeValue(string(raw))
	}
	if n, ok := plainInt(raw); ok {
		if int64(int(n)) == n {
			return int(n), nil
		}
		return float64(n), nil // registry.NumberValue's rule where int is 32 bits
	}
	return registry.NumberValue(string(raw)), nil
}

// plainInt is the value of a JSON integer of at most 18 digits (so it
// fits an int64), ok false for any other number.
func plainInt(raw []byte) (int64, bool) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(raw) {
		n = -n
	}
	return n, true
}

// epochInt is the event time of an epoch_ms or epoch_s field whose value
// raw is a JSON integer of at most 15 digits (below 2^53, so float64, as
// eventTime compares, is exact) within years 0001-9999: what eventTime
// gives it, without a string. ok is false for anything else, which
// eventTime reads (and words the problem of).
func (d *decoder) epochInt(raw []byte) (int64, bool) {
	if d.timeFmt != plan.TimeEpochMillis && d.timeFmt != plan.TimeEpochSecs || len(bytes.TrimPrefix(raw, []byte("-"))) > 15 {
		return 0, false
	}
	n, ok := plainInt(raw)
	if !ok {
		return 0, false
	}
	if d.timeFmt == plan.TimeEpochSecs {
		n *= 1000
	}
	if n < minEventMillis || n > maxEventMillis {
		return 0, false
	}
	return n, true
}

// strCache keeps the short strings of referenced fields boxed for the
// next records: what routes read is most often one of a few values (a
// level, a service), and a hit costs no allocation where a miss costs
// the two of a string in an interface. 32 sets of two ways, the newer
// first, so two frequent values that hash alike do not evict each other;
// its size is fixed, and it is one evalState's, so it needs no lock.
type strCache [32][2]struct {
	s string
	v any
}

// maxInterned bounds the strings strCache keeps (2 KB of text at most).
const maxInterned = 32

// str is b as a string in an interface, from the cache when it is there.
func (out *Decoded) str(b []byte) any {
	if len(b) > maxInterned {
		return string(b)
	}
	if out.strs == nil {
		out.strs = new(strCache)
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	set := &out.strs[h%uint32(len(out.strs))]
	for i := range set {
		if e := &set[i]; e.v != nil && e.s == string(b) {
			return e.v
		}
	}
	s := string(b)
	set[1] = set[0]
	set[0].s, set[0].v = s, s
	return set[0].v
}
