package opkey

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// TestTimeOrder: the encoding sorts as the times do and reads back.
func TestTimeOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := rapid.Int64().Draw(t, "a"), rapid.Int64().Draw(t, "b")
		ea, eb := AppendTime(nil, a), AppendTime(nil, b)
		if got, want := bytes.Compare(ea, eb), cmp(a, b); got != want {
			t.Fatalf("compare(%d, %d) = %d, want %d", a, b, got, want)
		}
		back, rest, ok := ReadTime(append(ea, 7))
		if !ok || back != a || len(rest) != 1 {
			t.Fatalf("read back %d %v %v, want %d", back, rest, ok, a)
		}
	})
	if _, _, ok := ReadTime(make([]byte, 7)); ok {
		t.Fatal("seven bytes read as a time")
	}
}

func cmp(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
