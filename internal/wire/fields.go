package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"unicode/utf8"
)

// The fields header (HeaderFields): the input fields stage one decoded
// that a window route's aggregates read, carried on the record it writes
// to the route's repartition topic, so stage two evaluates the aggregates
// on them instead of decoding the value again (for a registry-backed
// input the value is Avro or Protobuf, not JSON). The value stays the
// original bytes: late and overflow records write it unchanged.
//
// Encoding, version 1 (all counts and lengths unsigned varints):
//
//	header  = version(0x01) count { name value }        (count fields)
//	name    = len bytes                                  (UTF-8)
//	value   = 0x00                                       null
//	        | 0x01 | 0x02                                false | true
//	        | 0x03 zigzag-varint                         integer (int64)
//	        | 0x04 8 bytes, big-endian IEEE 754 bits     float64 (NaN, ±Inf, -0 kept)
//	        | 0x05 len bytes                             string (UTF-8)
//	        | 0x06 count { value }                       array
//	        | 0x07 count { name value }                  object
//
// It holds the runtime's value model (package registry's doc): nil,
// bool, int (exact int64), float64, string, []any and map[string]any,
// nested at most MaxFieldsDepth deep. Integers and floats stay apart, so
// an int64 beyond 2^53 is exact and 1 and 1.0 decode as they were
// decoded. A decimal the value model keeps as text is a string.

// FieldsVersion is the first byte of a fields header this build writes.
const FieldsVersion byte = 1

// MaxFieldsDepth bounds the nesting of a value (the JSON decoder refuses
// values nested deeper than 10000; the registry decoders stop at 1000).
const MaxFieldsDepth = 10000

const (
	tagNull byte = iota
	tagFalse
	tagTrue
	tagInt
	tagFloat
	tagString
	tagArray
	tagObject
)

// ErrFieldsVersion is wrapped by DecodeFields for a header of a version
// this build does not know (written by a newer one): the reader decodes
// the value as before instead.
var ErrFieldsVersion = errors.New("fields header version unknown")

// AppendFields appends the fields header of the fields named in names
// (in that order; a name fields lacks is left out) to dst. An error is a
// value outside the value model or nested deeper than MaxFieldsDepth.
func AppendFields(dst []byte, names []string, fields map[string]any) ([]byte, error) {
	return AppendFieldsFunc(dst, names, func(i int) (any, bool) {
		v, ok := fields[names[i]]
		return v, ok
	})
}

// AppendFieldsFunc is AppendFields with each field got by its index in
// names (false: the field is left out), so a caller holding its fields
// by number builds no map; get is called twice per name.
func AppendFieldsFunc(dst []byte, names []string, get func(i int) (any, bool)) ([]byte, error) {
	n := 0
	for i := range names {
		if _, ok := get(i); ok {
			n++
		}
	}
	dst = append(dst, FieldsVersion)
	dst = binary.AppendUvarint(dst, uint64(n))
	var err error
	for i, name := range names {
		v, ok := get(i)
		if !ok {
			continue
		}
		dst = appendString(dst, name)
		if dst, err = appendValue(dst, v, 1); err != nil {
			return nil, fmt.Errorf("field %q: %w", name, err)
		}
	}
	return dst, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > MaxFieldsDepth {
		return nil, fmt.Errorf("nested deeper than %d", MaxFieldsDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, tagNull), nil
	case bool:
		if x {
			return append(dst, tagTrue), nil
		}
		return append(dst, tagFalse), nil
	case int:
		return binary.AppendVarint(append(dst, tagInt), int64(x)), nil
	case int64:
		return binary.AppendVarint(append(dst, tagInt), x), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(dst, tagFloat), math.Float64bits(x)), nil
	case string:
		return appendString(append(dst, tagString), x), nil
	case []any:
		dst = binary.AppendUvarint(append(dst, tagArray), uint64(len(x)))
		var err error
		for _, e := range x {
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case map[string]any:
		return appendObject(dst, x, depth)
	}
	return nil, fmt.Errorf("a %T is not in the value model", v)
}

// appendObject writes an object's members by name, so the same value
// always has the same bytes (stage one is deterministic).
func appendObject(dst []byte, m map[string]any, depth int) ([]byte, error) {
	dst = binary.AppendUvarint(append(dst, tagObject), uint64(len(m)))
	var err error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		dst = appendString(dst, k)
		if dst, err = appendValue(dst, m[k], depth+1); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// FieldsError is a fields header that does not decode: a foreign writer
// or a corrupted record (ReasonBadFields).
type FieldsError struct {
	Offset int // of the byte where decoding stopped
	Msg    string
}

func (e *FieldsError) Error() string {
	return fmt.Sprintf("fields header: %s at byte %d", e.Msg, e.Offset)
}

// DecodeFields decodes a fields header into the value model. Errors: one
// wrapping ErrFieldsVersion for a version it does not know, else a
// *FieldsError. It never panics and allocates in proportion to b: every
// count is checked against the bytes left before anything is made.
func DecodeFields(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, &FieldsError{Msg: "empty"}
	}
	if b[0] != FieldsVersion {
		return nil, fmt.Errorf("%w: %d (this build reads %d)", ErrFieldsVersion, b[0], FieldsVersion)
	}
	d := fieldsDecoder{b: b, off: 1}
	m, err := d.members(1)
	if err != nil {
		return nil, err
	}
	if d.off != len(b) {
		return nil, d.fail("%d bytes left after the fields", len(b)-d.off)
	}
	return m, nil
}

type fieldsDecoder struct {
	b   []byte
	off int
}

func (d *fieldsDecoder) fail(format string, args ...any) error {
	return &FieldsError{Offset: d.off, Msg: fmt.Sprintf(format, args...)}
}

// count reads a count of items each at least size bytes long.
func (d *fieldsDecoder) count(size int) (int, error) {
	n, k := binary.Uvarint(d.b[d.off:])
	if k <= 0 {
		return 0, d.fail("bad count")
	}
	d.off += k
	if n > uint64((len(d.b)-d.off)/size) {
		return 0, d.fail("count %d is more than the %d bytes left hold", n, len(d.b)-d.off)
	}
	return int(n), nil
}

func (d *fieldsDecoder) str() (string, error) {
	n, err := d.count(1)
	if err != nil {
		return "", err
	}
	s := d.b[d.off : d.off+n]
	if !utf8.Valid(s) {
		return "", d.fail("string is not UTF-8")
	}
	d.off += n
	return string(s), nil
}

// members reads a count and that many name-value pairs.
func (d *fieldsDecoder) members(depth int) (map[string]any, error) {
	n, err := d.count(2) // a name's length and a value's tag at least
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, n)
	for range n {
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, d.fail("name %q repeats", k)
		}
		if m[k], err = d.value(depth); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (d *fieldsDecoder) value(depth int) (any, error) {
	if depth > MaxFieldsDepth {
		return nil, d.fail("nested deeper than %d", MaxFieldsDepth)
	}
	if d.off >= len(d.b) {
		return nil, d.fail("truncated: a value is missing")
	}
	tag := d.b[d.off]
	d.off++
	switch tag {
	case tagNull:
		return nil, nil
	case tagFalse, tagTrue:
		return tag == tagTrue, nil
	case tagInt:
		i, k := binary.Varint(d.b[d.off:])
		if k <= 0 {
			return nil, d.fail("bad integer")
		}
		d.off += k
		return int(i), nil
	case tagFloat:
		if len(d.b)-d.off < 8 {
			return nil, d.fail("truncated float")
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(d.b[d.off:]))
		d.off += 8
		return f, nil
	case tagString:
		return d.str()
	case tagArray:
		n, err := d.count(1)
		if err != nil {
			return nil, err
		}
		a := make([]any, n)
		for i := range a {
			if a[i], err = d.value(depth + 1); err != nil {
				return nil, err
			}
		}
		return a, nil
	case tagObject:
		return d.members(depth + 1)
	}
	d.off--
	return nil, d.fail("unknown value tag 0x%02x", tag)
}

// DecodeFieldsInto decodes a fields header as DecodeFields does, each
// field into vals at the number slot gives its name, without a map. It
// covers the headers stage one writes, names in increasing slot order;
// false (vals then partly written) is any other header: one that does
// not decode, of another version, with a name slot does not number, or
// names out of that order (so a repeated name too). The caller then
// reads it with DecodeFields, which gives the error or the fields.
func DecodeFieldsInto(b []byte, slot func(name []byte) (int, bool), vals []any) bool {
	if len(b) == 0 || b[0] != FieldsVersion {
		return false
	}
	d := fieldsDecoder{b: b, off: 1}
	n, err := d.count(2)
	if err != nil {
		return false
	}
	last := -1
	for range n {
		name, ok := d.name()
		if !ok {
			return false
		}
		i, ok := slot(name)
		if !ok || i <= last || i >= len(vals) {
			return false
		}
		last = i
		if vals[i], err = d.value(1); err != nil {
			return false
		}
	}
	return d.off == len(b)
}

// name is str's name, as the bytes of the header.
func (d *fieldsDecoder) name() ([]byte, bool) {
	n, err := d.count(1)
	if err != nil {
		return nil, false
	}
	s := d.b[d.off : d.off+n]
	if !utf8.Valid(s) {
		return nil, false
	}
	d.off += n
	return s, true
}
