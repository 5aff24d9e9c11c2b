package changelog_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/changelog/storetest"
)

// The suite opens hundreds of stores: on an in-memory file system (the
// same code; TestPebbleCheckpoint and the component tests use the disk).
func TestPebbleConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) changelog.Store {
		s, err := changelog.OpenPebbleInMemory()
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func dumpStore(t *testing.T, s changelog.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := s.Range(nil, func(k, v []byte) bool { out[string(k)] = string(v); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPebbleCheckpoint: committed writes and their offset survive a
// reopen, uncommitted ones never do, counters are exact after a reopen,
// and Wipe leaves an empty store without a checkpoint.
func TestPebbleCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "task")
	s, err := changelog.OpenPebble(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Checkpoint(); ok {
		t.Fatal("a new store has a checkpoint")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Set([]byte("a"), []byte("1")))
	must(s.Set([]byte("b"), []byte("22")))
	must(s.Restore([]byte("c"), []byte("333")))
	must(s.Commit(41, time.UnixMilli(1_000)))
	must(s.Set([]byte("a"), []byte("changed-but-not-committed")))
	must(s.Delete([]byte("b")))
	must(s.Set([]byte("d"), []byte("4")))
	if got := dumpStore(t, s); len(got) != 3 || got["a"] != "changed-but-not-committed" || got["d"] != "4" {
		t.Fatalf("pending writes are not visible: %v", got)
	}
	must(s.Close())

	s, err = changelog.OpenPebble(dir)
	if err != nil {
		t.Fatal(err)
	}
	if off, ok := s.Checkpoint(); !ok || off != 41 || !s.CheckpointTime().Equal(time.UnixMilli(1_000)) {
		t.Fatalf("checkpoint %d %v at %v, want 41 at 1s", off, ok, s.CheckpointTime())
	}
	want := map[string]string{"a": "1", "b": "22", "c": "333"}
	if got := dumpStore(t, s); len(got) != 3 || got["a"] != "1" || got["b"] != "22" || got["c"] != "333" {
		t.Fatalf("after reopen %v, want %v", got, want)
	}
	if s.Len() != 3 || s.SizeBytes() != 3+1+2+3 {
		t.Fatalf("counters after reopen: len %d size %d", s.Len(), s.SizeBytes())
	}
	if len(s.Changes()) != 0 {
		t.Fatalf("a reopened store reports changes: %v", s.Changes())
	}
	must(s.Wipe())
	if _, ok := s.Checkpoint(); ok || !s.CheckpointTime().IsZero() || s.Len() != 0 || s.SizeBytes() != 0 || len(dumpStore(t, s)) != 0 {
		t.Fatalf("after wipe: len %d size %d %v", s.Len(), s.SizeBytes(), dumpStore(t, s))
	}
	must(s.Set([]byte("x"), []byte("y")))
	must(s.Commit(7, time.UnixMilli(2_000)))
	// A restore writes without reading; its counters are recounted, also
	// across a commit and a reopen that happen before anyone asked.
	must(s.Restore([]byte("r1"), []byte("aaa")))
	must(s.Restore([]byte("r2"), []byte("b")))
	must(s.Restore([]byte("r1"), []byte("cc")))
	must(s.Restore([]byte("x"), nil))
	must(s.Restore([]byte("gone"), nil))
	must(s.Commit(12, time.UnixMilli(3_000)))
	must(s.Close())
	s, err = changelog.OpenPebble(dir)
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := s.Checkpoint(); off != 12 || !s.CheckpointTime().Equal(time.UnixMilli(3_000)) || s.Len() != 2 || s.SizeBytes() != 2+2+2+1 {
		t.Fatalf("after restore and reopen: checkpoint %d, len %d, size %d", off, s.Len(), s.SizeBytes())
	}
	must(s.Set([]byte("r3"), []byte("z")))
	if s.Len() != 3 || s.SizeBytes() != 7+3 {
		t.Fatalf("after a set: len %d size %d", s.Len(), s.SizeBytes())
	}
	must(s.Close())
	if err := s.Set([]byte("x"), nil); err != changelog.ErrClosed {
		t.Fatalf("write after close: %v", err)
	}

	// Builder: one directory per changelog partition.
	root := t.TempDir()
	b := changelog.PebbleBuilder(root)
	s1, err := b("app-errors-changelog", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	if _, err := os.Stat(filepath.Join(root, "app-errors-changelog", "3")); err != nil {
		t.Fatal(err)
	}
	if _, err := b("app-errors-changelog", 3); err == nil {
		t.Fatal("one partition's store opened twice at once")
	}
}
