package lookup

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
)

// store is a table under test: in memory, or in Pebble (restartable).
type store struct {
	*Table
	d    *Durable // nil in memory
	dir  string
	spec Spec
	seq  int
}

// fataler is a *testing.T or a *rapid.T.
type fataler interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// opener opens an empty store of spec.
type opener func(t fataler, spec Spec) *store

// eachStore runs a conformance test against both stores: the same
// property, the same oracle. The Pebble store is also restarted at
// random points, each restart holding the restored table to the one it
// replaced.
func eachStore(t *testing.T, test func(*testing.T, opener)) {
	t.Run("memory", func(t *testing.T) {
		test(t, func(rt fataler, spec Spec) *store {
			tb, err := New(spec)
			if err != nil {
				rt.Fatal(err)
			}
			return &store{Table: tb, spec: spec}
		})
	})
	t.Run("pebble", func(t *testing.T) {
		root, n := t.TempDir(), 0
		test(t, func(rt fataler, spec Spec) *store {
			n++
			s := &store{dir: filepath.Join(root, fmt.Sprint(n)), spec: spec}
			s.open(rt, "")
			return s
		})
	})
}

func encode(r Row) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return b
}

func (s *store) open(t fataler, wantReason string) {
	d, reason, err := OpenPebble(s.dir, s.spec, "fp", Decode)
	if err != nil {
		t.Fatal(err)
	}
	if reason != wantReason {
		t.Fatalf("open: rebuilt (%q), want %q", reason, wantReason)
	}
	s.d, s.Table = d, d.Table
}

// apply applies row (nil: a tombstone), its encoding JSON.
func (s *store) apply(key string, at int64, row Row) bool {
	var raw []byte
	if row != nil {
		raw = encode(row)
	}
	if s.d == nil {
		return s.Apply(key, at, row)
	}
	return s.d.Apply(key, at, row, raw)
}

// restart commits, closes and reopens a Pebble store, and fails unless
// the restored table keeps what the closed one kept, with the checkpoint
// committed.
func (s *store) restart(t fataler) *store {
	if s.d == nil {
		return s
	}
	s.seq++
	ck := fmt.Appendf(nil, "ck-%d", s.seq)
	if err := s.d.Commit(ck); err != nil {
		t.Fatal(err)
	}
	before, bt, bn, bb := kept(s.Table), s.maxTime, s.entries, s.bytes
	if err := s.d.Close(); err != nil {
		t.Fatal(err)
	}
	s.open(t, "")
	if string(s.d.Checkpoint()) != string(ck) {
		t.Fatalf("checkpoint %q, committed %q", s.d.Checkpoint(), ck)
	}
	after := kept(s.Table)
	if !reflect.DeepEqual(before, after) || bt != s.maxTime || bn != s.entries || bb != s.bytes {
		t.Fatalf("restored %v (max %d, %d entries, %d bytes), kept %v (max %d, %d, %d)", after, s.maxTime, s.entries, s.bytes, before, bt, bn, bb)
	}
	return s
}

// checkStored restarts a Pebble store once more (its checks are the
// test's end).
func (s *store) checkStored(t fataler) { s.restart(t) }

func (s *store) close() {
	if s.d != nil {
		_ = s.d.Close()
	}
}

// kept is what a table keeps: each key's versions (time, row id, size).
func kept(t *Table) map[string][][3]any {
	out := map[string][][3]any{}
	t.each(func(k string, vs []version) {
		for _, v := range vs {
			out[k] = append(out[k], [3]any{v.at, fmt.Sprint(rowID(v.row(t.names.list))), v.size})
		}
	})
	return out
}

// A store built from other settings is wiped on open, and a Wipe
// forgets the rows and the checkpoint.
func TestPebbleFingerprint(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{Mode: Current}
	d, reason, err := OpenPebble(dir, spec, "a", Decode)
	if err != nil || reason != "" {
		t.Fatal(err, reason)
	}
	d.Apply("k", 0, Row{"id": 1}, []byte(`{"id":1}`))
	if err := d.Commit([]byte("ck")); err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	d, reason, err = OpenPebble(dir, spec, "a", Decode)
	if err != nil || reason != "" || string(d.Checkpoint()) != "ck" {
		t.Fatal(err, reason, string(d.Checkpoint()))
	}
	if r, res := d.Get("k", 0); res != Hit || r["id"] != 1 {
		t.Fatalf("restored k: %v %v", r, res)
	}
	_ = d.Close()
	d, reason, err = OpenPebble(dir, spec, "b", Decode)
	if err != nil || reason != "the table's settings changed" || d.Checkpoint() != nil {
		t.Fatal(err, reason, d.Checkpoint())
	}
	if _, res := d.Get("k", 0); res != Miss {
		t.Fatal("a row survived the rebuild")
	}
	if n, _ := d.Size(); n != 0 {
		t.Fatalf("%d entries after the rebuild", n)
	}
	_ = d.Close()
}
