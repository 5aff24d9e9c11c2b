package redact

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Mask replaces every hidden value.
const Mask = "***"

// Redactor hides the values at its paths. The zero value hides nothing.
type Redactor struct {
	paths [][]string
}

// New compiles paths (config.RedactPath's syntax: "a.b.*.c").
func New(paths []string) *Redactor {
	r := &Redactor{}
	for _, p := range paths {
		if p != "" {
			r.paths = append(r.paths, strings.Split(p, "."))
		}
	}
	return r
}

// state is how far one path matched: path index, next segment.
type state struct{ p, i int }

// JSON returns b with every value at one of the paths replaced by "***",
// in the same order of fields, and the text of every hidden scalar and
// field name (for Leaks). ok is false when b is not one JSON value: the
// caller must then withhold b altogether, since nothing says where its
// fields are.
func (r *Redactor) JSON(b []byte) (out []byte, hidden []string, ok bool) {
	if !json.Valid(b) {
		return nil, nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var buf bytes.Buffer
	w := walker{r: r, dec: dec, out: &buf}
	start := make([]state, len(r.paths))
	for i := range r.paths {
		start[i] = state{i, 0}
	}
	if err := w.value(start); err != nil {
		return nil, nil, false
	}
	return buf.Bytes(), w.hidden, true
}

type walker struct {
	r      *Redactor
	dec    *json.Decoder
	out    *bytes.Buffer
	hidden []string
}

// step advances states over one field name (key) or list element
// (index >= 0, key ""): the states after it, and whether a path ends
// there (the value is hidden).
func (w *walker) step(states []state, key string, index int) (next []state, hide bool) {
	for _, s := range states {
		seg := w.r.paths[s.p][s.i]
		match := seg == "*"
		switch {
		case index < 0:
			match = match || seg == key
		case isIndex(seg):
			match = seg == strconv.Itoa(index)
		case !match:
			// A list is crossed without naming its index.
			next = append(next, s)
			continue
		}
		if !match {
			continue
		}
		if s.i+1 == len(w.r.paths[s.p]) {
			hide = true
		} else {
			next = append(next, state{s.p, s.i + 1})
		}
	}
	return next, hide
}

func (w *walker) value(states []state) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			w.out.WriteByte('{')
			for n := 0; w.dec.More(); n++ {
				kt, err := w.dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				if n > 0 {
					w.out.WriteByte(',')
				}
				writeString(w.out, k)
				w.out.WriteByte(':')
				if err := w.member(states, k, -1); err != nil {
					return err
				}
			}
			if _, err := w.dec.Token(); err != nil {
				return err
			}
			w.out.WriteByte('}')
		case '[':
			w.out.WriteByte('[')
			for i := 0; w.dec.More(); i++ {
				if i > 0 {
					w.out.WriteByte(',')
				}
				if err := w.member(states, "", i); err != nil {
					return err
				}
			}
			if _, err := w.dec.Token(); err != nil {
				return err
			}
			w.out.WriteByte(']')
		}
	case string:
		writeString(w.out, t)
	case json.Number:
		w.out.WriteString(string(t))
	case bool:
		w.out.WriteString(strconv.FormatBool(t))
	case nil:
		w.out.WriteString("null")
	}
	return nil
}

// member writes the value of one object member (key) or array element
// (index), or its mask when a redact path names it.
func (w *walker) member(states []state, key string, index int) error {
	next, hide := w.step(states, key, index)
	if hide {
		return w.skip()
	}
	return w.value(next)
}

// skip reads one value, writes the mask instead and remembers the text
// of its strings and numbers (field names are structure, not data).
func (w *walker) skip() error {
	writeString(w.out, Mask)
	return w.drop()
}

func (w *walker) drop() error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		for w.dec.More() {
			if t == '{' {
				if _, err := w.dec.Token(); err != nil {
					return err
				}
			}
			if err := w.drop(); err != nil {
				return err
			}
		}
		_, err = w.dec.Token()
		return err
	case string:
		if t != "" {
			w.hidden = append(w.hidden, t)
		}
	case json.Number:
		w.hidden = append(w.hidden, string(t))
	}
	return nil
}

// isIndex reports whether a segment names a list index: digits, no
// leading zero.
func isIndex(seg string) bool {
	if seg == "" || (len(seg) > 1 && seg[0] == '0') {
		return false
	}
	for _, c := range seg {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

// Leaks reports whether s holds any of hidden, as JSON.Redact returned
// them: a free text (an error message, a key) that quotes a hidden value
// must be withheld too.
func Leaks(s string, hidden []string) bool {
	for _, h := range hidden {
		if h != "" && strings.Contains(s, h) {
			return true
		}
	}
	return false
}
