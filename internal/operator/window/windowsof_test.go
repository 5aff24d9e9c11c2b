package window_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/operator/window"
)

// TestWindowsOf: the windows held for a key, their aggregates and the
// revision of their last emission; keys that are prefixes of one another
// or contain NUL bytes never see each other's windows; purged windows are
// gone.
func TestWindowsOf(t *testing.T) {
	op, err := window.New(window.Spec{
		Kind: window.Hopping, Size: time.Minute, Advance: 30 * time.Second, Grace: 30 * time.Second,
		Aggregations: []window.Aggregation{{Name: "n", Kind: window.Count}, {Name: "sum", Kind: window.Sum}},
	}, changelog.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []struct {
		key string
		t   int64
		v   int
	}{{"a", 40_000, 2}, {"ab", 41_000, 5}, {"a\x00", 42_000, 7}, {"a", 70_000, 3}} {
		if _, err := op.Process(in.key, in.t, []any{1, in.v}); err != nil {
			t.Fatal(err)
		}
	}
	show := func(key string) string {
		t.Helper()
		ws, err := op.WindowsOf(key)
		if err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, w := range ws {
			s += fmt.Sprintf("%s|%s\n", w.Key, w.Value)
		}
		return s
	}
	// Watermark 70 s: [0,60s) fired once (revision 1); [30s,90s) and
	// [60s,120s) have not fired.
	want := `a@0|{"key":"a","window_start":0,"window_end":60000,"aggregates":{"n":1,"sum":2},"revision":1,"final":false}
a@30000|{"key":"a","window_start":30000,"window_end":90000,"aggregates":{"n":2,"sum":5},"revision":0,"final":false}
a@60000|{"key":"a","window_start":60000,"window_end":120000,"aggregates":{"n":1,"sum":3},"revision":0,"final":false}
`
	if got := show("a"); got != want {
		t.Fatalf("windows of a:\n%s\nwant:\n%s", got, want)
	}
	if got := show("a\x00"); got == "" || got == show("a") {
		t.Fatalf("windows of a\\x00: %q", got)
	}
	if got := show("missing"); got != "" {
		t.Fatalf("windows of a missing key: %q", got)
	}
	// Watermark 100 s: [0,60s) is purged (end + grace = 90 s).
	if _, err := op.Process("z", 100_000, []any{1, 0}); err != nil {
		t.Fatal(err)
	}
	ws, err := op.WindowsOf("a")
	if err != nil || len(ws) != 2 || ws[0].Start != 30_000 {
		t.Fatalf("after purge: %+v %v", ws, err)
	}
}
