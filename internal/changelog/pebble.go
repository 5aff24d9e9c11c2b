package changelog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// Key spaces of the Pebble database: every store key is prefixed with
// dataNS, the checkpoint and counters live under metaNS.
const (
	dataNS = 'd'
	metaNS = 'm'
)

var (
	metaCheckpoint = []byte{metaNS, 'c'} // the changelog offset to restore from
	metaCount      = []byte{metaNS, 'n'} // Len
	metaSize       = []byte{metaNS, 's'} // SizeBytes
	metaTime       = []byte{metaNS, 't'} // the checkpoint's time, unix ms
)

// Checkpointer is a Store whose state survives the process: it knows the
// changelog offset its durable state reflects, so a restart restores only
// the changelog from there.
//
// Writes (Set, Delete, Restore) are visible to reads at once but become
// durable only with Commit, atomically with the offset: the durable state
// is always exactly the state at some committed changelog offset, never
// ahead of the changelog (Close discards what was not committed). The
// runtime commits after the transaction that wrote the changes to the
// changelog committed, so a crash anywhere leaves a state that a tail
// restore from the checkpoint brings up to date.
type Checkpointer interface {
	Store
	// Checkpoint is the next changelog offset to restore from, and
	// whether the durable state has one (false: empty or unusable state;
	// wipe and restore fully).
	Checkpoint() (offset int64, ok bool)
	// CheckpointTime is the time the caller gave with the last Commit
	// (zero if none): a tail restore is safe only while no tombstone
	// written since could have been compacted away, that is while the
	// checkpoint is younger than the changelog's delete.retention.ms.
	CheckpointTime() time.Time
	// Commit makes every write since the last Commit durable (synced),
	// together with the checkpoint offset and the time at which the state
	// reflected the changelog up to it (the package reads no clock).
	Commit(offset int64, at time.Time) error
	// Wipe deletes all state, durable and pending, and the checkpoint.
	Wipe() error
}

// Pebble is the on-disk Store (github.com/cockroachdb/pebble), for state
// larger than memory. One database per task, in its own directory.
type Pebble struct {
	dir   string
	fs    vfs.FS
	db    *pebble.DB
	b     *pebble.Batch // indexed: pending writes, read through
	n     int
	size  int64
	ckpt  int64
	ckAt  time.Time
	hasCk bool
	// stale: Restore writes without reading, so n and size are unknown
	// until recount (run on the first Len, SizeBytes, Set or Delete).
	stale  bool
	closed bool
	// changed holds each key changed since the last ResetChanges: its
	// current value (a copy; nil once deleted) and whether it existed at
	// that reset, so Changes needs no reads that could fail.
	changed map[string]*pending
	kbuf    []byte
}

type pending struct {
	existed bool
	value   []byte
}

var (
	_ Checkpointer = (*Pebble)(nil)
	_ Seeker       = (*Pebble)(nil)
)

// OpenPebble opens (creating it if needed) the store in dir.
func OpenPebble(dir string) (*Pebble, error) { return openPebble(vfs.Default, dir) }

// OpenPebbleInMemory opens a store on an in-memory file system: the same
// code paths without disk I/O, for tests and benchmarks.
func OpenPebbleInMemory() (*Pebble, error) { return openPebble(vfs.NewMem(), "store") }

func openPebble(fs vfs.FS, dir string) (*Pebble, error) {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pebble store %s: %w", dir, err)
	}
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, Logger: pebbleLogger{}})
	if err != nil {
		return nil, fmt.Errorf("open pebble store %s: %w", dir, err)
	}
	s := &Pebble{dir: dir, fs: fs, db: db, changed: map[string]*pending{}}
	if err := s.load(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open pebble store %s: %w", dir, err)
	}
	s.b = db.NewIndexedBatch()
	return s, nil
}

// load reads the checkpoint and counters. A malformed checkpoint is not
// trusted (reported as none: the runtime wipes and restores in full);
// missing counters (the last commit followed a restore) are recounted
// when first needed.
func (s *Pebble) load() error {
	read := func(k []byte) (int64, bool, error) {
		v, c, err := s.db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		defer c.Close()
		x, n := binary.Varint(v)
		if n <= 0 || x < 0 {
			return 0, false, nil
		}
		return x, true, nil
	}
	ck, ok, err := read(metaCheckpoint)
	if err != nil {
		return err
	}
	s.ckpt, s.hasCk = ck, ok
	if at, ok, err := read(metaTime); err != nil {
		return err
	} else if ok {
		s.ckAt = time.UnixMilli(at)
	}
	n, okN, err := read(metaCount)
	if err != nil {
		return err
	}
	size, okS, err := read(metaSize)
	if err != nil {
		return err
	}
	if okN && okS {
		s.n, s.size = int(n), size
	} else {
		s.stale = true
	}
	return nil
}

// recount brings stale counters up to date with one scan of the data.
func (s *Pebble) recount() error {
	if !s.stale {
		return nil
	}
	it, err := s.b.NewIter(&pebble.IterOptions{LowerBound: []byte{dataNS}, UpperBound: []byte{dataNS + 1}})
	if err != nil {
		return err
	}
	n, size := 0, int64(0)
	for ok := it.First(); ok; ok = it.Next() {
		n++
		size += int64(len(it.Key()) - 1 + len(it.Value()))
	}
	if err := it.Close(); err != nil {
		return err
	}
	s.n, s.size, s.stale = n, size, false
	return nil
}

func (s *Pebble) dataKey(key []byte) []byte {
	s.kbuf = append(append(s.kbuf[:0], dataNS), key...)
	return s.kbuf
}

// get reads through the pending batch; the value is a copy.
func (s *Pebble) get(key []byte) ([]byte, bool, error) {
	v, c, err := s.b.Get(s.dataKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := make([]byte, len(v))
	copy(out, v)
	return out, true, c.Close()
}

// Get implements Store.
func (s *Pebble) Get(key []byte) ([]byte, bool, error) {
	if s.closed {
		return nil, false, ErrClosed
	}
	return s.get(key)
}

// put sets or deletes (value nil) key and keeps the counters; it reports
// whether key existed.
func (s *Pebble) put(key, value []byte, del bool) (bool, error) {
	if err := s.recount(); err != nil {
		return false, err
	}
	old, existed, err := s.get(key)
	if err != nil {
		return false, err
	}
	if del {
		if !existed {
			return false, nil
		}
		if err := s.b.Delete(s.dataKey(key), nil); err != nil {
			return false, err
		}
		s.n--
		s.size -= int64(len(key) + len(old))
		return true, nil
	}
	if err := s.b.Set(s.dataKey(key), value, nil); err != nil {
		return false, err
	}
	if existed {
		s.size += int64(len(value) - len(old))
	} else {
		s.n++
		s.size += int64(len(key) + len(value))
	}
	return existed, nil
}

func (s *Pebble) track(key, value []byte, existed bool) {
	c := s.changed[string(key)]
	if c == nil {
		c = &pending{existed: existed}
		s.changed[string(key)] = c
	}
	if value == nil {
		c.value = nil
		return
	}
	c.value = append(make([]byte, 0, len(value)), value...) // non-nil even when empty
}

// Set implements Store.
func (s *Pebble) Set(key, value []byte) error {
	if s.closed {
		return ErrClosed
	}
	existed, err := s.put(key, value, false)
	if err != nil {
		return fmt.Errorf("pebble store %s: set: %w", s.dir, err)
	}
	if value == nil {
		value = []byte{}
	}
	s.track(key, value, existed)
	return nil
}

// Delete implements Store.
func (s *Pebble) Delete(key []byte) error {
	if s.closed {
		return ErrClosed
	}
	existed, err := s.put(key, nil, true)
	if err != nil {
		return fmt.Errorf("pebble store %s: delete: %w", s.dir, err)
	}
	s.track(key, nil, existed)
	return nil
}

// Restore implements Store.
func (s *Pebble) Restore(key, value []byte) error {
	if s.closed {
		return ErrClosed
	}
	// No read: a restore writes many records, and reading each one's
	// old value for the counters halved the restore rate. The counters
	// are recounted once, when next needed.
	s.stale = true
	var err error
	if value == nil {
		err = s.b.Delete(s.dataKey(key), nil)
	} else {
		err = s.b.Set(s.dataKey(key), value, nil)
	}
	if err != nil {
		return fmt.Errorf("pebble store %s: restore: %w", s.dir, err)
	}
	return nil
}

// Range implements Store.
func (s *Pebble) Range(prefix []byte, fn func(key, value []byte) bool) error {
	return s.RangeFrom(prefix, prefix, fn)
}

// RangeFrom implements Seeker: the iterator's lower bound is start, so
// the tombstones below it are never visited.
func (s *Pebble) RangeFrom(prefix, start []byte, fn func(key, value []byte) bool) error {
	if s.closed {
		return ErrClosed
	}
	if bytes.Compare(start, prefix) < 0 {
		start = prefix
	}
	pfx := append([]byte{dataNS}, prefix...)
	lower := append([]byte{dataNS}, start...)
	it, err := s.b.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upperBound(pfx)})
	if err != nil {
		return fmt.Errorf("pebble store %s: range: %w", s.dir, err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if !fn(it.Key()[1:], it.Value()) {
			break
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("pebble store %s: range: %w", s.dir, err)
	}
	return nil
}

// upperBound is the smallest key greater than every key with prefix p
// (p never is all 0xff: it starts with dataNS).
func upperBound(p []byte) []byte {
	u := slices.Clone(p)
	for i := len(u) - 1; i >= 0; i-- {
		if u[i] < 0xff {
			u[i]++
			return u[:i+1]
		}
	}
	return nil
}

// Len implements Store. After a restore it recounts (one scan); should
// that scan fail, it returns the last known count.
func (s *Pebble) Len() int {
	if !s.closed {
		_ = s.recount()
	}
	return s.n
}

// SizeBytes implements Store (recounting after a restore, as Len).
func (s *Pebble) SizeBytes() int64 {
	if !s.closed {
		_ = s.recount()
	}
	return s.size
}

// Changes implements Store. The slices are copies.
func (s *Pebble) Changes() []Change {
	if len(s.changed) == 0 || s.closed {
		return nil
	}
	out := make([]Change, 0, len(s.changed))
	for k, c := range s.changed {
		if c.value != nil || c.existed {
			out = append(out, Change{Key: []byte(k), Value: c.value})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return bytes.Compare(a.Key, b.Key) })
	return out
}

// ResetChanges implements Store.
func (s *Pebble) ResetChanges() {
	if len(s.changed) > 4096 {
		s.changed = map[string]*pending{}
		return
	}
	clear(s.changed)
}

// Checkpoint implements Checkpointer.
func (s *Pebble) Checkpoint() (int64, bool) { return s.ckpt, s.hasCk }

// CheckpointTime implements Checkpointer.
func (s *Pebble) CheckpointTime() time.Time { return s.ckAt }

// Commit implements Checkpointer.
func (s *Pebble) Commit(offset int64, at time.Time) error {
	if s.closed {
		return ErrClosed
	}
	if offset < 0 {
		return fmt.Errorf("pebble store %s: negative checkpoint %d", s.dir, offset)
	}
	metas := []struct {
		k []byte
		v int64
	}{{metaCheckpoint, offset}, {metaTime, at.UnixMilli()}, {metaCount, int64(s.n)}, {metaSize, s.size}}
	if s.stale { // mid-restore: counters are recounted after the next open
		metas = metas[:2]
		for _, k := range [][]byte{metaCount, metaSize} {
			if err := s.b.Delete(k, nil); err != nil {
				return fmt.Errorf("pebble store %s: commit: %w", s.dir, err)
			}
		}
	}
	for _, kv := range metas {
		if err := s.b.Set(kv.k, binary.AppendVarint(nil, kv.v), nil); err != nil {
			return fmt.Errorf("pebble store %s: commit: %w", s.dir, err)
		}
	}
	if err := s.b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("pebble store %s: commit at offset %d: %w", s.dir, offset, err)
	}
	_ = s.b.Close()
	s.b = s.db.NewIndexedBatch()
	s.ckpt, s.ckAt, s.hasCk = offset, time.UnixMilli(at.UnixMilli()), true
	return nil
}

// Wipe implements Checkpointer.
func (s *Pebble) Wipe() error {
	if s.closed {
		return ErrClosed
	}
	_ = s.b.Close()
	if err := s.db.Close(); err != nil {
		s.closed = true
		return fmt.Errorf("pebble store %s: wipe: %w", s.dir, err)
	}
	if err := s.fs.RemoveAll(s.dir); err != nil {
		s.closed = true
		return fmt.Errorf("pebble store %s: wipe: %w", s.dir, err)
	}
	fresh, err := openPebble(s.fs, s.dir)
	if err != nil {
		s.closed = true
		return err
	}
	*s = *fresh
	return nil
}

// Close implements Store. Writes not committed are discarded.
func (s *Pebble) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	_ = s.b.Close()
	s.changed = nil
	return s.db.Close()
}

// PebbleBuilder opens one Pebble store per changelog partition under dir:
// dir/<changelog topic>/<partition>.
func PebbleBuilder(dir string) Builder {
	return func(topic string, partition int32) (Store, error) {
		return OpenPebble(filepath.Join(dir, topic, strconv.Itoa(int(partition))))
	}
}

// pebbleLogger sends Pebble's errors to slog; its informational logs
// are dropped. Fatalf is Pebble's unrecoverable corruption: it must not
// return. Nothing recovers the panic (no record's path recovers one):
// the process exits with the message logged, and the store's directory
// under state.dir is what to remove so the task restores it from its
// changelog.
type pebbleLogger struct{}

func (pebbleLogger) Infof(string, ...any) {}
func (pebbleLogger) Errorf(format string, args ...any) {
	slog.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	slog.Error(msg, "component", "pebble")
	panic("pebble: " + msg)
}
