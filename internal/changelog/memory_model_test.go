package changelog_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/changelog"
)

// TestMemoryMatchesModel drives Memory and a map with random writes over
// enough keys to split and merge chunks, deleting from the front and the
// back of them, and requires the same contents, order and change sets;
// change sets handed out earlier must stay as they were.
func TestMemoryMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := changelog.NewMemory()
		model := map[string]string{}
		atReset := map[string]string{} // the contents at the last reset
		changed := map[string]bool{}
		type kept struct{ got, want []changelog.Change }
		var handed []kept
		nkeys := rapid.IntRange(1, 3000).Draw(t, "nkeys")
		key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
		for step := range rapid.IntRange(1, 3000).Draw(t, "steps") {
			i := rapid.IntRange(0, nkeys-1).Draw(t, "key")
			// Mostly in key order, so whole chunks fill and drain.
			if rapid.IntRange(0, 3).Draw(t, "ordered") > 0 {
				i = step % nkeys
			}
			k := key(i)
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); {
			case op < 5:
				v := fmt.Appendf(nil, "v%d", step)
				if err := m.Set(k, v); err != nil {
					t.Fatal(err)
				}
				v[0] = 'X' // Set copied it
				model[string(k)], changed[string(k)] = fmt.Sprintf("v%d", step), true
			case op < 9:
				if err := m.Delete(k); err != nil {
					t.Fatal(err)
				}
				delete(model, string(k))
				changed[string(k)] = true
			default:
				got := m.Changes()
				want := modelChanges(model, atReset, changed)
				if !equalChanges(got, want) {
					t.Fatalf("step %d: changes %v, want %v", step, got, want)
				}
				handed = append(handed, kept{got, want})
				m.ResetChanges()
				atReset, changed = maps.Clone(model), map[string]bool{}
			}
		}
		if m.Len() != len(model) {
			t.Fatalf("Len %d, model %d", m.Len(), len(model))
		}
		var got []string
		if err := m.Range(nil, func(k, v []byte) bool {
			if model[string(k)] != string(v) {
				t.Fatalf("%s = %s, model %s", k, v, model[string(k)])
			}
			got = append(got, string(k))
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if want := slices.Sorted(maps.Keys(model)); !slices.Equal(got, want) {
			t.Fatalf("range %v, want %v", got, want)
		}
		if !equalChanges(m.Changes(), modelChanges(model, atReset, changed)) {
			t.Fatal("final changes differ")
		}
		for _, h := range handed {
			if !equalChanges(h.got, h.want) {
				t.Fatalf("a change set handed out earlier changed: %v, was %v", h.got, h.want)
			}
		}
	})
}

func modelChanges(now, atReset map[string]string, changed map[string]bool) []changelog.Change {
	var out []changelog.Change
	for _, k := range slices.Sorted(maps.Keys(changed)) {
		v, ok := now[k]
		_, was := atReset[k]
		switch {
		case ok:
			out = append(out, changelog.Change{Key: []byte(k), Value: []byte(v)})
		case was:
			out = append(out, changelog.Change{Key: []byte(k)})
		}
	}
	return out
}

func equalChanges(a, b []changelog.Change) bool {
	return slices.EqualFunc(a, b, func(x, y changelog.Change) bool {
		return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value) && x.Tombstone() == y.Tombstone()
	})
}
