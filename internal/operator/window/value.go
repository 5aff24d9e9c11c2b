package window

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// vkind is the kind of a normalized input value.
type vkind uint8

const (
	vNone   vkind = iota // nil: skipped by every aggregation
	vFalse               // bool false
	vTrue                // bool true
	vInt                 // int64
	vFloat               // finite float64
	vString              // string
	vOther               // anything else: only Count accepts it
)

// value is a normalized input or aggregate value.
type value struct {
	k vkind
	i int64
	f float64
	s string
}

func (v value) number() bool { return v.k == vInt || v.k == vFloat }
func (v value) scalar() bool { return v.k >= vFalse && v.k <= vString }

func (v value) float() float64 {
	if v.k == vInt {
		return float64(v.i)
	}
	return v.f
}

// normalize turns a caller's value into a value. ok is false for a
// non-finite float (NaN, ±Inf), which no aggregation can represent in JSON.
func normalize(x any) (v value, ok bool) {
	switch x := x.(type) {
	case nil:
		return value{}, true
	case bool:
		if x {
			return value{k: vTrue}, true
		}
		return value{k: vFalse}, true
	case int:
		return value{k: vInt, i: int64(x)}, true
	case int8:
		return value{k: vInt, i: int64(x)}, true
	case int16:
		return value{k: vInt, i: int64(x)}, true
	case int32:
		return value{k: vInt, i: int64(x)}, true
	case int64:
		return value{k: vInt, i: x}, true
	case uint:
		return fromUint(uint64(x)), true
	case uint8:
		return value{k: vInt, i: int64(x)}, true
	case uint16:
		return value{k: vInt, i: int64(x)}, true
	case uint32:
		return value{k: vInt, i: int64(x)}, true
	case uint64:
		return fromUint(x), true
	case float32:
		return fromFloat(float64(x))
	case float64:
		return fromFloat(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return value{k: vInt, i: i}, true
		}
		f, err := x.Float64()
		if err != nil {
			return value{k: vString, s: string(x)}, true
		}
		return fromFloat(f)
	case string:
		return value{k: vString, s: x}, true
	}
	return value{k: vOther}, true
}

func fromUint(u uint64) value {
	if u > math.MaxInt64 {
		return value{k: vFloat, f: float64(u)}
	}
	return value{k: vInt, i: int64(u)}
}

func fromFloat(f float64) (value, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return value{}, false
	}
	return value{k: vFloat, f: f}, true
}

// less compares two numbers by value.
func less(a, b value) bool {
	if a.k == vInt && b.k == vInt {
		return a.i < b.i
	}
	return a.float() < b.float()
}

// order is a total order of scalars, for the tie-break of First and Last
// between values of one event time, so that neither depends on the order
// records arrive in: false < true < numbers (by value; an integer before
// a float of equal value) < strings (by bytes).
func order(a, b value) int {
	rank := func(v value) int {
		switch v.k {
		case vInt, vFloat:
			return 2
		case vString:
			return 3
		}
		return int(v.k) - 1 // vFalse 0, vTrue 1
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra - rb
	}
	switch {
	case a.k == vString:
		return strings.Compare(a.s, b.s)
	case !a.number():
		return 0
	case less(a, b):
		return -1
	case less(b, a):
		return 1
	}
	return int(a.k) - int(b.k) // vInt before vFloat
}

// canonical is the identity of a scalar for DistinctCount: numbers by
// value, so 1 and 1.0 are one value.
func canonical(v value) string {
	switch v.k {
	case vFalse:
		return "b0"
	case vTrue:
		return "b1"
	case vString:
		return "s" + v.s
	case vInt:
		return "n" + strconv.FormatInt(v.i, 10)
	}
	f := v.f
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		return "n" + strconv.FormatInt(int64(f), 10)
	}
	return "n" + strconv.FormatFloat(f, 'g', -1, 64)
}

// appendJSON appends v as JSON.
func appendJSON(b []byte, v value) []byte {
	switch v.k {
	case vFalse:
		return append(b, "false"...)
	case vTrue:
		return append(b, "true"...)
	case vInt:
		return strconv.AppendInt(b, v.i, 10)
	case vFloat:
		return appendFloat(b, v.f)
	case vString:
		return appendString(b, v.s)
	}
	return append(b, "null"...)
}

// appendFloat formats like encoding/json (ES6 number formatting).
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
