package lookup

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/sidestream/sidestream/internal/registry"
)

// A JSON row is encoded straight from its text (encodeJSON), without the
// map Decode builds: loading a 100,000-row table through encoding/json
// maps was about 25 allocations a row. The encoding is the one
// encodeRow gives Decode's row; a row the direct path does not cover (a
// string with an escape or invalid UTF-8, a field name twice, not an
// object) goes through Decode, which also reports what is wrong with it.

// ApplyJSON is Apply of a row given as JSON, as Decode reads it; err is
// Decode's, and the row is then not applied.
func (t *Table) ApplyJSON(key string, at int64, raw []byte) (bool, error) {
	return t.applyJSON(key, at, raw, false)
}

// ApplyJSON is Durable.Apply of a row given as JSON (raw, also what the
// store keeps); err as Table.ApplyJSON's.
func (d *Durable) ApplyJSON(key string, at int64, raw []byte) (bool, error) {
	return d.applyJSON(key, at, raw, true)
}

func (t *Table) applyJSON(key string, at int64, raw []byte, keep bool) (bool, error) {
	if t.spec.Mode == Current && json.Valid(raw) {
		t.mu.Lock()
		e, ok := t.jsonEntry(key, raw)
		if ok {
			defer t.mu.Unlock()
			if !t.setEntry(key, e, true) {
				return false, nil
			}
			if t.sink != nil {
				t.sink.put(key, 0, sinkRaw(raw, keep))
			}
			return true, nil
		}
		t.mu.Unlock()
	}
	row, err := Decode(raw)
	if err != nil {
		return false, err
	}
	return t.apply(key, at, row, sinkRaw(raw, keep)), nil
}

func sinkRaw(raw []byte, keep bool) []byte {
	if keep {
		return raw
	}
	return nil
}

// jsonEntry is key's entry of the JSON row raw (valid JSON), ok false
// when the direct path does not cover it; the caller holds the lock.
func (t *Table) jsonEntry(key string, raw []byte) (entry, bool) {
	j := jsonEncoder{s: raw, n: &t.names, tmp: t.jsonTmp, fields: t.jsonFields}
	j.space()
	if j.i >= len(j.s) || j.s[j.i] != '{' {
		return entry{}, false
	}
	b, ok := j.value(append(t.scratch[:0], key...))
	t.scratch, t.jsonTmp, t.jsonFields = b[:0], j.tmp[:0], j.fields[:0]
	if !ok {
		return entry{}, false
	}
	e := entry{klen: uint32(len(key)), data: string(b)}
	e.size = currentCost(len(e.data), nil)
	return e, true
}

// jsonEncoder encodes one valid JSON value (json.Valid said so: only
// the token ends are looked for) as encodeValue encodes what Decode
// makes of it.
type jsonEncoder struct {
	s      []byte
	i      int
	n      *names
	tmp    []byte      // an object's member encodings while they are sorted
	fields []jsonField // the members of the objects being read, innermost last
}

// jsonField is one member of an object: its name in s, its value's
// encoding in the output.
type jsonField struct {
	name       []byte
	start, end int
}

func (j *jsonEncoder) space() {
	for j.i < len(j.s) {
		switch j.s[j.i] {
		case ' ', '\t', '\n', '\r':
			j.i++
		default:
			return
		}
	}
}

func (j *jsonEncoder) value(b []byte) ([]byte, bool) {
	j.space()
	switch c := j.s[j.i]; c {
	case '{':
		return j.object(b)
	case '[':
		return j.list(b)
	case '"':
		s, ok := j.str()
		if !ok {
			return b, false
		}
		b = binary.AppendUvarint(append(b, tagString), uint64(len(s)))
		return append(b, s...), true
	case 't':
		j.i += 4
		return append(b, tagTrue), true
	case 'f':
		j.i += 5
		return append(b, tagFalse), true
	case 'n':
		j.i += 4
		return append(b, tagNil), true
	}
	return j.number(b)
}

// str is the next string's bytes, ok false when it holds an escape or
// is not UTF-8 (encoding/json then rewrites it: Decode's path).
func (j *jsonEncoder) str() ([]byte, bool) {
	j.i++
	start, ascii := j.i, true
	for ; j.s[j.i] != '"'; j.i++ {
		switch c := j.s[j.i]; {
		case c == '\\':
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	s := j.s[start:j.i]
	j.i++
	return s, ascii || utf8.Valid(s)
}

func (j *jsonEncoder) number(b []byte) ([]byte, bool) {
	start := j.i
	for j.i < len(j.s) {
		c := j.s[j.i]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		j.i++
	}
	raw := j.s[start:j.i]
	if n, ok := plainInt(raw); ok {
		return binary.AppendVarint(append(b, tagInt), n), true
	}
	v, ok := encodeValue(b, j.n, registry.NumberValue(string(raw)))
	return v, ok
}

// plainInt is a JSON integer of at most 18 digits (it fits an int64
// and an int on a 64-bit machine), as NumberValue reads it.
func plainInt(raw []byte) (int64, bool) {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 || strconv.IntSize != 64 {
		return 0, false
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(d) < len(raw) {
		n = -n
	}
	return n, true
}

func (j *jsonEncoder) list(b []byte) ([]byte, bool) {
	j.i++
	// The length comes first: count the values, then write them.
	var vals []byte
	n := 0
	for {
		j.space()
		if j.s[j.i] == ']' {
			j.i++
			break
		}
		var ok bool
		if vals, ok = j.value(vals); !ok {
			return b, false
		}
		n++
		j.space()
		if j.s[j.i] == ',' {
			j.i++
		}
	}
	b = binary.AppendUvarint(append(b, tagList), uint64(n))
	return append(b, vals...), true
}

// object writes the members sorted by name, as encodeMap does; a name
// twice (encoding/json keeps the last) is Decode's path.
func (j *jsonEncoder) object(b []byte) ([]byte, bool) {
	j.i++
	base, f0 := len(b), len(j.fields)
	for {
		j.space()
		if j.s[j.i] == '}' {
			j.i++
			break
		}
		name, ok := j.str()
		if !ok {
			return b, false
		}
		j.space()
		j.i++ // ':'
		start := len(b)
		if b, ok = j.value(b); !ok {
			return b, false
		}
		j.fields = append(j.fields, jsonField{name: name, start: start - base, end: len(b) - base})
		j.space()
		if j.s[j.i] == ',' {
			j.i++
		}
	}
	fields := j.fields[f0:]
	slices.SortFunc(fields, func(a, b jsonField) int { return bytes.Compare(a.name, b.name) })
	for k := 1; k < len(fields); k++ {
		if bytes.Equal(fields[k-1].name, fields[k].name) {
			return b, false
		}
	}
	j.tmp = append(j.tmp[:0], b[base:]...)
	b = binary.AppendUvarint(append(b[:base], tagMap), uint64(len(fields)))
	for _, f := range fields {
		b = j.n.appendNameBytes(b, f.name)
		b = append(b, j.tmp[f.start:f.end]...)
	}
	j.fields = j.fields[:f0]
	return b, true
}
