package show

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestRender(t *testing.T) {
	for _, tc := range []struct {
		in         string
		max        int
		kind, text string
		truncated  bool
	}{
		{"", 10, KindEmpty, "", false},
		{`{"a":1,"b":[true]}`, 0, KindJSON, "{\n  \"a\": 1,\n  \"b\": [\n    true\n  ]\n}", false},
		{`{"a":1}`, 3, KindText, `{"a`, true},
		{"plain text", 0, KindText, "plain text", false},
		{"bell\a esc\x1b[0m tab\t nl\n", 0, KindText, `bell\a esc\x1b[0m tab\t nl\n`, false},
		{"back\\slash", 0, KindText, `back\\slash`, false},
		{"\xff\xfe\x00", 0, KindBinary, "fffe00", false},
		{"ok then \xff", 4, KindBinary, "6f6b2074", true},
		{"héllo", 2, KindText, "h", true}, // never half a rune
		{"zero\u200bwidth", 0, KindText, `zero\u200bwidth`, false},
		{`<script>alert(1)</script>`, 0, KindText, `<script>alert(1)</script>`, false}, // HTML escaping is the page's job
	} {
		v := Render([]byte(tc.in), tc.max)
		if v.Kind != tc.kind || v.Text != tc.text || v.Truncated != tc.truncated || v.Bytes != len(tc.in) {
			t.Errorf("Render(%q, %d) = %+v; want %s %q truncated=%v", tc.in, tc.max, v, tc.kind, tc.text, tc.truncated)
		}
	}
}

func TestKey(t *testing.T) {
	for in, want := range map[string]string{"e-1": "e-1", "\xff\x00": "0xff00", "\x00\x01": `\x00\x01`, "": `""`, "a\nb": `a\nb`, strings.Repeat("k", 10): "kkkk…"} {
		if got := Key([]byte(in), 4); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
	if Key(nil, 4) != "<null>" {
		t.Errorf("nil key")
	}
}

// FuzzRender: any bytes render to valid UTF-8 with no control character
// (newlines only inside pretty JSON), within the bound.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":"\u0000"}`, "\xff", "a\x1b", "héllo", "[1,2", "\u202e"} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		max %= 64
		v := Render(b, max)
		if !utf8.ValidString(v.Text) {
			t.Fatalf("invalid UTF-8 out: %q", v.Text)
		}
		for _, r := range v.Text {
			if r == '\n' && v.Kind == KindJSON {
				continue
			}
			if unicode.IsControl(r) || (!unicode.IsPrint(r) && r != ' ') {
				t.Fatalf("%s rendering holds %U: %q", v.Kind, r, v.Text)
			}
		}
		if max > 0 && len(b) > max {
			if !v.Truncated {
				t.Fatalf("not marked truncated")
			}
			if v.Kind == KindBinary && len(v.Text) != 2*max {
				t.Fatalf("hex of %d bytes is %d chars", max, len(v.Text))
			}
		}
		if v.Bytes != len(b) {
			t.Fatalf("bytes %d, want %d", v.Bytes, len(b))
		}
		k := Key(b, max)
		if strings.ContainsAny(k, "\n\r\x1b") || !utf8.ValidString(k) {
			t.Fatalf("key rendering %q", k)
		}
	})
}
