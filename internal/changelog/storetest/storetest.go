package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
)

// Run runs the whole suite. newStore must return an empty store; the suite
// closes it.
func Run(t *testing.T, newStore func(t *testing.T) changelog.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s changelog.Store)
	}{
		{"GetMissing", testGetMissing},
		{"SetGetOverwrite", testSetGetOverwrite},
		{"SetCopiesInput", testSetCopiesInput},
		{"EmptyValueIsNotDelete", testEmptyValue},
		{"Delete", testDelete},
		{"RangePrefixOrder", testRangePrefixOrder},
		{"RangeEarlyStop", testRangeEarlyStop},
		{"RangeFrom", testRangeFrom},
		{"LenAndSize", testLenAndSize},
		{"ChangesLastValuePerKey", testChangesLastValue},
		{"ChangesCreatedAndDeleted", testChangesCreatedAndDeleted},
		{"RestoreIsNotAChange", testRestore},
		{"Close", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			defer s.Close()
			tc.fn(t, s)
		})
	}
	t.Run("ModelAndReplay", func(t *testing.T) { testModelAndReplay(t, newStore) })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s changelog.Store, key string) ([]byte, bool) {
	t.Helper()
	v, ok, err := s.Get([]byte(key))
	must(t, err)
	return v, ok
}

func dump(t *testing.T, s changelog.Store, prefix string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, s.Range([]byte(prefix), func(k, v []byte) bool {
		out[string(k)] = string(v)
		return true
	}))
	return out
}

func keys(t *testing.T, s changelog.Store, prefix string) []string {
	t.Helper()
	var out []string
	must(t, s.Range([]byte(prefix), func(k, _ []byte) bool {
		out = append(out, string(k))
		return true
	}))
	return out
}

func changes(s changelog.Store) []string {
	var out []string
	for _, c := range s.Changes() {
		if c.Tombstone() {
			out = append(out, string(c.Key)+"=<tombstone>")
		} else {
			out = append(out, string(c.Key)+"="+string(c.Value))
		}
	}
	return out
}

func testGetMissing(t *testing.T, s changelog.Store) {
	if v, ok := get(t, s, "nope"); ok || v != nil {
		t.Fatalf("Get(missing) = %q, %v", v, ok)
	}
	if s.Len() != 0 || s.SizeBytes() != 0 {
		t.Fatalf("empty store: Len %d SizeBytes %d", s.Len(), s.SizeBytes())
	}
	if c := s.Changes(); len(c) != 0 {
		t.Fatalf("empty store has changes %v", c)
	}
}

func testSetGetOverwrite(t *testing.T, s changelog.Store) {
	must(t, s.Set([]byte("a"), []byte("1")))
	must(t, s.Set([]byte("a"), []byte("22")))
	if v, ok := get(t, s, "a"); !ok || string(v) != "22" {
		t.Fatalf("Get(a) = %q, %v; want 22", v, ok)
	}
	if s.Len() != 1 {
		t.Fatalf("Len = %d, want 1", s.Len())
	}
}

func testSetCopiesInput(t *testing.T, s changelog.Store) {
	k, v := []byte("key"), []byte("value")
	must(t, s.Set(k, v))
	k[0], v[0] = 'X', 'X'
	if got, ok := get(t, s, "key"); !ok || string(got) != "value" {
		t.Fatalf("Set kept the caller's buffer: %q %v", got, ok)
	}
	if _, ok := get(t, s, "Xey"); ok {
		t.Fatal("Set kept the caller's key buffer")
	}
}

func testEmptyValue(t *testing.T, s changelog.Store) {
	must(t, s.Set([]byte("e"), []byte{}))
	must(t, s.Set([]byte("n"), nil))
	for _, k := range []string{"e", "n"} {
		if v, ok := get(t, s, k); !ok || len(v) != 0 {
			t.Fatalf("Get(%s) = %q, %v; want empty, true", k, v, ok)
		}
	}
	for _, c := range s.Changes() {
		if c.Tombstone() {
			t.Fatalf("empty value reported as tombstone: %q", c.Key)
		}
	}
	must(t, s.Restore([]byte("r"), []byte{}))
	if _, ok := get(t, s, "r"); !ok {
		t.Fatal("Restore with an empty value must set the key")
	}
}

func testDelete(t *testing.T, s changelog.Store) {
	must(t, s.Set([]byte("a"), []byte("1")))
	must(t, s.Set([]byte("b"), []byte("2")))
	must(t, s.Delete([]byte("a")))
	must(t, s.Delete([]byte("missing")))
	if _, ok := get(t, s, "a"); ok {
		t.Fatal("a still present after Delete")
	}
	if v, ok := get(t, s, "b"); !ok || string(v) != "2" {
		t.Fatalf("b = %q, %v", v, ok)
	}
	if s.Len() != 1 || s.SizeBytes() != 2 {
		t.Fatalf("Len %d SizeBytes %d; want 1, 2", s.Len(), s.SizeBytes())
	}
}

func testRangePrefixOrder(t *testing.T, s changelog.Store) {
	in := []string{"b\x00", "a", "b", "b\xff", "ba", "c", "b\x00\x01", "", "\xff\xff"}
	for _, k := range in {
		must(t, s.Set([]byte(k), []byte("v"+k)))
	}
	want := slices.Clone(in)
	slices.Sort(want)
	if got := keys(t, s, ""); !slices.Equal(got, want) {
		t.Fatalf("Range(all) = %q, want %q", got, want)
	}
	if got := keys(t, s, "b"); !slices.Equal(got, []string{"b", "b\x00", "b\x00\x01", "ba", "b\xff"}) {
		t.Fatalf("Range(b) = %q", got)
	}
	if got := keys(t, s, "b\x00"); !slices.Equal(got, []string{"b\x00", "b\x00\x01"}) {
		t.Fatalf("Range(b\\x00) = %q", got)
	}
	if got := keys(t, s, "zz"); len(got) != 0 {
		t.Fatalf("Range(zz) = %q", got)
	}
	if d := dump(t, s, "c"); d["c"] != "vc" {
		t.Fatalf("Range value = %q", d["c"])
	}
}

// testRangeFrom: a store that implements changelog.Seeker returns, for
// any start, exactly the keys of Range(prefix) that are >= start, also
// after deletes in front of start (the tombstones a seek must skip).
func testRangeFrom(t *testing.T, s changelog.Store) {
	sk, ok := s.(changelog.Seeker)
	if !ok {
		t.Skip("the store does not implement changelog.Seeker")
	}
	for i := range 300 {
		must(t, s.Set(fmt.Appendf(nil, "t%03d", i), nil))
		must(t, s.Set(fmt.Appendf(nil, "w%03d", i), []byte("v")))
	}
	for i := range 200 {
		must(t, s.Delete(fmt.Appendf(nil, "t%03d", i)))
	}
	from := func(prefix, start string) []string {
		var out []string
		must(t, sk.RangeFrom([]byte(prefix), []byte(start), func(k, _ []byte) bool {
			out = append(out, string(k))
			return true
		}))
		return out
	}
	for _, tc := range []struct{ prefix, start string }{
		{"t", "t"}, {"t", ""}, {"t", "t150"}, {"t", "t250"}, {"t", "t2505"}, {"t", "t299"}, {"t", "t3"}, {"t", "u"},
		{"", "t290"}, {"w", "w"}, {"w", "a"}, {"", ""},
	} {
		var want []string
		for _, k := range keys(t, s, tc.prefix) {
			if k >= tc.start {
				want = append(want, k)
			}
		}
		if got := from(tc.prefix, tc.start); !slices.Equal(got, want) {
			t.Fatalf("RangeFrom(%q, %q) = %d keys %q..., want %d", tc.prefix, tc.start, len(got), head(got), len(want))
		}
	}
	n := 0
	must(t, sk.RangeFrom([]byte("w"), []byte("w100"), func([]byte, []byte) bool { n++; return n < 3 }))
	if n != 3 {
		t.Fatalf("RangeFrom did not stop when fn returned false: %d calls", n)
	}
}

func head(s []string) []string { return s[:min(len(s), 3)] }

func testRangeEarlyStop(t *testing.T, s changelog.Store) {
	for i := range 2000 {
		must(t, s.Set(fmt.Appendf(nil, "k%05d", i), nil))
	}
	var got []string
	must(t, s.Range([]byte("k"), func(k, _ []byte) bool {
		got = append(got, string(k))
		return len(got) < 3
	}))
	if !slices.Equal(got, []string{"k00000", "k00001", "k00002"}) {
		t.Fatalf("early stop: %q", got)
	}
	got = got[:0]
	must(t, s.Range([]byte("k01"), func(k, _ []byte) bool {
		got = append(got, string(k))
		return true
	}))
	if len(got) != 1000 || got[0] != "k01000" || got[999] != "k01999" {
		t.Fatalf("Range(k01): %d keys, first %q", len(got), got[0])
	}
}

func testLenAndSize(t *testing.T, s changelog.Store) {
	must(t, s.Set([]byte("ab"), []byte("123")))  // 5
	must(t, s.Set([]byte("c"), []byte("4")))     // 2
	must(t, s.Set([]byte("ab"), []byte("1234"))) // 6
	if s.Len() != 2 || s.SizeBytes() != 8 {
		t.Fatalf("Len %d SizeBytes %d; want 2, 8", s.Len(), s.SizeBytes())
	}
	must(t, s.Restore([]byte("d"), []byte("xyz"))) // 4
	must(t, s.Restore([]byte("c"), nil))
	if s.Len() != 2 || s.SizeBytes() != 10 {
		t.Fatalf("after restore: Len %d SizeBytes %d; want 2, 10", s.Len(), s.SizeBytes())
	}
}

func testChangesLastValue(t *testing.T, s changelog.Store) {
	must(t, s.Set([]byte("b"), []byte("1")))
	must(t, s.Set([]byte("a"), []byte("1")))
	must(t, s.Set([]byte("b"), []byte("2")))
	must(t, s.Set([]byte("c"), []byte("1")))
	want := []string{"a=1", "b=2", "c=1"}
	if got := changes(s); !slices.Equal(got, want) {
		t.Fatalf("Changes = %q, want %q", got, want)
	}
	if got := changes(s); !slices.Equal(got, want) {
		t.Fatalf("Changes is not repeatable: %q", got)
	}
	s.ResetChanges()
	if got := changes(s); len(got) != 0 {
		t.Fatalf("after reset: %q", got)
	}
	must(t, s.Delete([]byte("a")))
	must(t, s.Set([]byte("c"), []byte("3")))
	must(t, s.Delete([]byte("c")))
	must(t, s.Set([]byte("b"), []byte("2"))) // same value: still a change
	want = []string{"a=<tombstone>", "b=2", "c=<tombstone>"}
	if got := changes(s); !slices.Equal(got, want) {
		t.Fatalf("Changes = %q, want %q", got, want)
	}
}

func testChangesCreatedAndDeleted(t *testing.T, s changelog.Store) {
	must(t, s.Set([]byte("tmp"), []byte("1")))
	must(t, s.Delete([]byte("tmp")))
	must(t, s.Delete([]byte("never")))
	if got := changes(s); len(got) != 0 {
		t.Fatalf("created and deleted within one interval: %q", got)
	}
	must(t, s.Set([]byte("tmp"), []byte("2")))
	if got := changes(s); !slices.Equal(got, []string{"tmp=2"}) {
		t.Fatalf("re-created: %q", got)
	}
}

func testRestore(t *testing.T, s changelog.Store) {
	must(t, s.Restore([]byte("a"), []byte("1")))
	must(t, s.Restore([]byte("b"), []byte("2")))
	must(t, s.Restore([]byte("a"), nil))
	must(t, s.Restore([]byte("zz"), nil))
	if got := changes(s); len(got) != 0 {
		t.Fatalf("Restore recorded changes: %q", got)
	}
	if d := dump(t, s, ""); !maps.Equal(d, map[string]string{"b": "2"}) {
		t.Fatalf("after restore: %v", d)
	}
	// A restored key deleted later must produce a tombstone: it existed.
	must(t, s.Delete([]byte("b")))
	if got := changes(s); !slices.Equal(got, []string{"b=<tombstone>"}) {
		t.Fatalf("delete of a restored key: %q", got)
	}
}

func testClose(t *testing.T, s changelog.Store) {
	must(t, s.Set([]byte("a"), []byte("1")))
	must(t, s.Close())
	if _, _, err := s.Get([]byte("a")); !errors.Is(err, changelog.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := s.Set([]byte("a"), nil); !errors.Is(err, changelog.ErrClosed) {
		t.Fatalf("Set after Close: %v", err)
	}
	if err := s.Range(nil, func(_, _ []byte) bool { return true }); !errors.Is(err, changelog.ErrClosed) {
		t.Fatalf("Range after Close: %v", err)
	}
}

// testModelAndReplay drives random operations against a map model and,
// at random commit points, ships Changes to a changelog; a second store
// restored from that changelog must equal the first at every commit.
func testModelAndReplay(t *testing.T, newStore func(t *testing.T) changelog.Store) {
	rapid.Check(t, func(rt *rapid.T) {
		s := newStore(t)
		defer s.Close()
		model := map[string]string{}
		var log []changelog.Change
		keyGen := rapid.Custom(func(rt *rapid.T) string {
			// A small key space with shared prefixes and zero bytes, so
			// overwrites, deletes and prefix scans hit each other.
			n := rapid.IntRange(0, 3).Draw(rt, "keylen")
			b := make([]byte, n)
			for i := range b {
				b[i] = rapid.SampledFrom([]byte{0, 'a', 'b', 0xff}).Draw(rt, "keybyte")
			}
			return string(b)
		})
		steps := rapid.IntRange(1, 400).Draw(rt, "steps")
		for range steps {
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op < 5:
				k := keyGen.Draw(rt, "key")
				v := rapid.StringN(0, 4, -1).Draw(rt, "value")
				must(t, s.Set([]byte(k), []byte(v)))
				model[k] = v
			case op < 8:
				k := keyGen.Draw(rt, "key")
				must(t, s.Delete([]byte(k)))
				delete(model, k)
			default:
				for _, c := range s.Changes() {
					log = append(log, changelog.Change{Key: bytes.Clone(c.Key), Value: cloneOrNil(c.Value)})
				}
				s.ResetChanges()
				checkReplay(t, newStore, log, model)
			}
			if s.Len() != len(model) {
				t.Fatalf("Len %d, model %d", s.Len(), len(model))
			}
		}
		if got := dump(t, s, ""); !maps.Equal(got, model) {
			t.Fatalf("store %q != model %q", got, model)
		}
		var size int64
		for k, v := range model {
			size += int64(len(k) + len(v))
		}
		if s.SizeBytes() != size {
			t.Fatalf("SizeBytes %d, model %d", s.SizeBytes(), size)
		}
		prefix := keyGen.Draw(rt, "prefix")
		var want []string
		for k := range model {
			if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if got := keys(t, s, prefix); !slices.Equal(got, want) {
			t.Fatalf("Range(%q) = %q, want %q", prefix, got, want)
		}
		for _, c := range s.Changes() {
			log = append(log, changelog.Change{Key: bytes.Clone(c.Key), Value: cloneOrNil(c.Value)})
		}
		checkReplay(t, newStore, log, model)
	})
}

func cloneOrNil(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func checkReplay(t *testing.T, newStore func(t *testing.T) changelog.Store, log []changelog.Change, model map[string]string) {
	t.Helper()
	r := newStore(t)
	defer r.Close()
	for _, c := range log {
		must(t, r.Restore(c.Key, c.Value))
	}
	if got := dump(t, r, ""); !maps.Equal(got, model) {
		t.Fatalf("restored %q != model %q", got, model)
	}
	if len(r.Changes()) != 0 {
		t.Fatal("restore recorded changes")
	}
}
