package assembly

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString: appendString renders every string, valid UTF-8 or
// not, byte for byte as json.Marshal does, for strings and byte slices.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "order-9", `<a href="x">&amp;</a>`, "tab\tnl\nnul\x00\x1f\x7f", "\b\f\r\\/",
		"\xff\xfe", "é\u2028\u2029\U0001F600", "\xe2\x80", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("appendString(%q) = %s, json.Marshal = %s", s, got, want)
		}
		if got := appendString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("appendString([]byte %q) = %s, json.Marshal = %s", s, got, want)
		}
	})
}
