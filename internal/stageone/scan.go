package stageone

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// eachMember calls fn with each top-level member of the JSON object v, in
// order: its key as written, quotes included (escaped: the key has an
// escape, to be decoded), and its value's raw bytes. Values are skipped,
// not decoded (gjson's ForEach parses every value, numbers through
// ParseFloat, to hand each one over), but their grammar is checked on the
// way: eachMember reports whether v is one JSON object, with only JSON
// whitespace around it, whose strings are valid UTF-8. That is exactly
// utf8.Valid(v) && gjson.ValidBytes(v) && v is an object (gjson's grammar:
// no nesting limit, lone surrogate escapes allowed), so the value is read
// once, not once to validate and once more to find the members.
//
// On bytes that are not, it returns false at the first fault, having
// called fn for the members before it: the caller decides nothing from
// those calls until the scan has succeeded. It never reads past v, and
// nesting is tracked on a heap stack, not by recursion.
func eachMember(v []byte, fn func(key []byte, escaped bool, raw []byte)) bool {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return false
	}
	i = skipSpace(v, i+1)
	if i < len(v) && v[i] == '}' {
		return skipSpace(v, i+1) == len(v)
	}
	for {
		if i >= len(v) || v[i] != '"' {
			return false
		}
		ke, esc, ok := stringEnd(v, i+1)
		if !ok {
			return false
		}
		key := v[i:ke]
		if i = skipSpace(v, ke); i >= len(v) || v[i] != ':' {
			return false
		}
		vs := skipSpace(v, i+1)
		ve, ok := valueEnd(v, vs)
		if !ok {
			return false
		}
		fn(key, esc, v[vs:ve])
		if i = skipSpace(v, ve); i >= len(v) {
			return false
		}
		switch v[i] {
		case ',':
			i = skipSpace(v, i+1)
		case '}':
			return skipSpace(v, i+1) == len(v)
		default:
			return false
		}
	}
}

func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
		i++
	}
	return i
}

// plain marks the bytes that stand for themselves inside a JSON string:
// not a quote, a backslash, a control character or the start of a
// multi-byte UTF-8 sequence.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// stringEnd checks the string whose content starts at v[i] (past its
// opening quote) and returns the index just past its closing quote and
// whether it has an escape. ok is false for an unterminated string, a
// control character, an escape JSON does not have, or bytes that are not
// UTF-8.
func stringEnd(v []byte, i int) (end int, esc, ok bool) {
	for {
		if i = plainEnd(v, i); i >= len(v) {
			return len(v), esc, false
		}
		switch c := v[i]; {
		case c == '"':
			return i + 1, esc, true
		case c == '\\':
			esc = true
			n := escapeLen(v, i)
			if n == 0 {
				return i, esc, false
			}
			i += n
		case c < 0x20:
			return i, esc, false
		default:
			r, size := utf8.DecodeRune(v[i:])
			if r == utf8.RuneError && size == 1 {
				return i, esc, false
			}
			i += size
		}
	}
}

// plainEnd is the index of the first byte at or after v[i] that is not
// plain, or len(v): eight bytes at a time, the first one that is not
// found from the lowest bit of special8's mask, not by a byte loop (most
// strings of a log event are shorter than eight bytes, so the word that
// holds the closing quote is the only one read).
func plainEnd(v []byte, i int) int {
	for i+8 <= len(v) {
		if m := special8(binary.LittleEndian.Uint64(v[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	for i < len(v) && plain[v[i]] {
		i++
	}
	return i
}

// special8 marks the bytes of w that are not plain (below 0x20, a quote,
// a backslash, 0x80 and above) with their high bit. The bit tricks can
// mark a plain byte too, but only one above a marked byte (a borrow runs
// upward), so the lowest mark is exact: the first byte that is not plain.
func special8(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(x uint64) uint64 { return (x - ones) & ^x & highs } // a zero byte
	below := (w - 0x20*ones) & ^w & highs                            // a byte < 0x20
	return below | zero(w^('"'*ones)) | zero(w^('\\'*ones)) | w&highs
}

// escapeLen is the length of the escape starting at v[i] (a backslash), 0
// if it is not one of JSON's: \" \\ \/ \b \f \n \r \t \uXXXX.
func escapeLen(v []byte, i int) int {
	if i+1 >= len(v) {
		return 0
	}
	switch v[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if i+6 > len(v) {
			return 0
		}
		for _, h := range v[i+2 : i+6] {
			if !isHex(h) {
				return 0
			}
		}
		return 6
	}
	return 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// valueEnd checks the JSON value starting at v[i] (no whitespace before
// it) and returns the index just past it.
func valueEnd(v []byte, i int) (int, bool) {
	if i >= len(v) {
		return i, false
	}
	switch c := v[i]; {
	case c == '"':
		e, _, ok := stringEnd(v, i+1)
		return e, ok
	case c == '{' || c == '[':
		return nestedEnd(v, i)
	case c == '-' || c >= '0' && c <= '9':
		return numberEnd(v, i)
	case c == 't':
		return literalEnd(v, i, "true")
	case c == 'f':
		return literalEnd(v, i, "false")
	case c == 'n':
		return literalEnd(v, i, "null")
	}
	return i, false
}

func literalEnd(v []byte, i int, lit string) (int, bool) {
	if len(v)-i >= len(lit) && string(v[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// numberEnd checks the JSON number starting at v[i]:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
// What may follow it is the caller's to check.
func numberEnd(v []byte, i int) (int, bool) {
	if v[i] == '-' {
		i++
	}
	switch {
	case i >= len(v) || v[i] < '0' || v[i] > '9':
		return i, false
	case v[i] == '0':
		i++
	default:
		i = digitsEnd(v, i)
	}
	if i < len(v) && v[i] == '.' {
		if i++; i >= len(v) || v[i] < '0' || v[i] > '9' {
			return i, false
		}
		i = digitsEnd(v, i)
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		if i++; i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		if i >= len(v) || v[i] < '0' || v[i] > '9' {
			return i, false
		}
		i = digitsEnd(v, i)
	}
	return i, true
}

func digitsEnd(v []byte, i int) int {
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	return i
}

// nestedEnd checks the object or array starting at v[i] and returns the
// index just past it. open holds the containers entered and not yet
// closed, their opening bytes; a closing byte is its opening byte + 2
// ('{' '}', '[' ']').
func nestedEnd(v []byte, i int) (int, bool) {
	var buf [32]byte
	open := buf[:0]
	var ok bool
	for {
		// v[i] starts a value.
		if c := v[i]; c == '{' || c == '[' {
			open = append(open, c)
			if i = skipSpace(v, i+1); i < len(v) && v[i] == c+2 {
				open, i = open[:len(open)-1], i+1
			} else {
				if c == '{' {
					if i, ok = memberValue(v, i); !ok {
						return i, false
					}
				}
				if i >= len(v) {
					return i, false
				}
				continue
			}
		} else if i, ok = valueEnd(v, i); !ok {
			return i, false
		}
		// A value ended: close containers, or go on to the next element.
		for {
			if len(open) == 0 {
				return i, true
			}
			if i = skipSpace(v, i); i >= len(v) {
				return i, false
			}
			top := open[len(open)-1]
			if v[i] == top+2 {
				open, i = open[:len(open)-1], i+1
				continue
			}
			if v[i] != ',' {
				return i, false
			}
			i = skipSpace(v, i+1)
			if top == '{' {
				if i, ok = memberValue(v, i); !ok {
					return i, false
				}
			}
			if i >= len(v) {
				return i, false
			}
			break
		}
	}
}

// memberValue checks a member's key and colon starting at v[i] and
// returns the index of its value's first byte.
func memberValue(v []byte, i int) (int, bool) {
	if i >= len(v) || v[i] != '"' {
		return i, false
	}
	e, _, ok := stringEnd(v, i+1)
	if !ok {
		return e, false
	}
	if i = skipSpace(v, e); i >= len(v) || v[i] != ':' {
		return i, false
	}
	return skipSpace(v, i+1), true
}
