package changelog

import "errors"

// ErrClosed is returned by every operation on a closed store.
var ErrClosed = errors.New("changelog: store is closed")

// Store is the key-value state of one task, with change tracking for the
// changelog.
//
// Keys are compared as bytes (bytes.Compare). A nil and an empty value are
// different: Set(k, nil) and Set(k, []byte{}) both store an empty value,
// only Delete (or Restore with a nil value) removes a key. Set copies key
// and value, so the caller may reuse its buffers. No slice handed out by
// the store may be modified by the caller.
type Store interface {
	// Get returns the value of key and whether it exists. The value is
	// valid until the next write to the store (Memory's stays valid for
	// good; an on-disk backend may reuse buffers).
	Get(key []byte) (value []byte, ok bool, err error)
	// Set stores a copy of value under a copy of key and records a change.
	Set(key, value []byte) error
	// Delete removes key and records a change (a tombstone). Deleting a
	// missing key is not an error.
	Delete(key []byte) error
	// Range calls fn for every key with the given prefix, in ascending key
	// order, until fn returns false. A nil or empty prefix ranges over
	// everything. key and value are valid only during the call, and fn
	// must not modify the store.
	Range(prefix []byte, fn func(key, value []byte) bool) error
	// Len is the number of keys.
	Len() int
	// SizeBytes is the logical size: the sum of len(key)+len(value) over
	// all keys. It excludes the backend's own overhead.
	SizeBytes() int64

	// Changes returns, in ascending key order, the current value of every
	// key changed since the last ResetChanges, a nil Value meaning the key
	// is deleted (a tombstone). Only the last value of a key is reported;
	// a key that did not exist at the last reset and does not exist now
	// is not reported at all (created and deleted within one commit).
	// The caller may keep the returned slices (they are handed to the
	// producer, which holds them until delivery); the store never modifies
	// them afterwards.
	Changes() []Change
	// ResetChanges forgets the tracked changes: call it after the commit
	// that wrote them to the changelog succeeded.
	ResetChanges()
	// Restore applies one changelog record without tracking it as a
	// change: a nil value deletes key, any other value (even empty) sets it.
	Restore(key, value []byte) error

	// Close releases the store. Operations after Close return ErrClosed.
	Close() error
}

// Seeker is implemented by stores that can start a prefix scan at a
// key: RangeFrom calls fn for every key with the prefix that is >= start,
// in ascending order, until fn returns false (Range's contract
// otherwise). Both stores implement it. On Pebble it matters: a scan that
// starts below the live keys walks over every deleted key (tombstone)
// not yet compacted away, so an operator that deletes from the front of a
// key range (timers) seeks past them.
type Seeker interface {
	RangeFrom(prefix, start []byte, fn func(key, value []byte) bool) error
}

// Change is the current state of one changed key, as it must be written to
// the changelog: Value nil is a tombstone.
type Change struct {
	Key   []byte
	Value []byte
}

// Tombstone reports whether the change deletes its key.
func (c Change) Tombstone() bool { return c.Value == nil }

// Builder opens the store of one task: the given input topic and
// partition. The runtime calls it when the partition is assigned, restores
// the store from the changelog, and closes it when the partition is
// revoked.
type Builder func(topic string, partition int32) (Store, error)

// MemoryBuilder builds an empty Memory store per partition.
func MemoryBuilder() Builder {
	return func(string, int32) (Store, error) { return NewMemory(), nil }
}
