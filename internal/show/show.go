package show

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Kinds of a rendered value.
const (
	KindEmpty  = "empty"  // nil or zero bytes
	KindJSON   = "json"   // valid JSON, pretty-printed
	KindText   = "text"   // valid UTF-8 that is not JSON, escaped
	KindBinary = "binary" // not UTF-8: hex
)

// Value is bytes rendered for a person.
type Value struct {
	Kind string `json:"kind"`
	// Text is the rendering: indented JSON, escaped text (without
	// surrounding quotes) or lower-case hex.
	Text string `json:"text"`
	// Bytes is the size of the original bytes.
	Bytes int `json:"bytes"`
	// Truncated says Text shows only a prefix of the bytes.
	Truncated bool `json:"truncated,omitempty"`
}

// Render renders b, keeping at most max bytes of it (max <= 0: no
// limit). JSON longer than max is shown as escaped text of its prefix, as
// a cut document is no longer JSON.
func Render(b []byte, max int) Value {
	v := Value{Bytes: len(b)}
	if len(b) == 0 {
		v.Kind = KindEmpty
		return v
	}
	cut := b
	if max > 0 && len(b) > max {
		cut, v.Truncated = b[:max], true
	}
	if !utf8.Valid(b) {
		v.Kind, v.Text = KindBinary, hex.EncodeToString(cut)
		return v
	}
	if !v.Truncated && json.Valid(b) {
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err == nil {
			// Indent keeps trailing whitespace; invisible runes can only
			// be inside strings, where \u escapes keep the JSON valid.
			v.Kind, v.Text = KindJSON, escapeJSON(strings.TrimRight(out.String(), " \t\r\n"))
			return v
		}
	}
	v.Kind, v.Text = KindText, Escape(string(trimPartialRune(cut)))
	return v
}

// trimPartialRune drops a rune cut in half at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		r, size := utf8.DecodeLastRune(b)
		if r != utf8.RuneError || size != 1 {
			return b
		}
		b = b[:len(b)-1]
	}
	return b
}

// Escape quotes what a terminal or a page would not show as itself:
// control characters, invalid bytes and invisible or format runes. Plain
// printable text, newlines excluded, is returned unchanged.
func Escape(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				b.WriteString(`\x` + hex.EncodeToString([]byte{s[i]}))
				continue
			}
			b.WriteRune(r)
		case r == '\\':
			b.WriteString(`\\`)
		case unicode.IsPrint(r) || r == ' ':
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// Key renders a record key on one line: escaped text, or hex for binary,
// cut to max bytes with a trailing "…".
func Key(k []byte, max int) string {
	if k == nil {
		return "<null>"
	}
	v := Render(k, max)
	s := v.Text
	switch v.Kind {
	case KindEmpty:
		return `""`
	case KindBinary:
		s = "0x" + s
	case KindJSON:
		n := len(k)
		if max > 0 && max < n {
			n = max
		}
		s = Escape(string(k[:n]))
	}
	s = strings.ReplaceAll(s, "\n", `\n`)
	if v.Truncated {
		s += "…"
	}
	return s
}

// escapeJSON writes the runes of a JSON text that would not show as
// themselves as \u escapes (surrogate pairs beyond the BMP).
func escapeJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || r == ' ' || (unicode.IsPrint(r) && r != utf8.RuneError) {
			b.WriteRune(r)
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}
