package changelog

import (
	"bytes"
	"slices"
	"sort"
	"unsafe"
)

// Chunk bounds of Memory's ordered index. A chunk is split when it grows
// past maxChunk and merged into a neighbour when it shrinks below
// minChunk, so inserts move at most maxChunk entries and lookups are two
// binary searches.
const (
	maxChunk = 512
	minChunk = 64
)

// Memory is the in-memory Store, the default backend. Its ordered index is
// a list of sorted chunks (the sortedcontainers layout): cache-friendly,
// one small allocation per entry, O(log n) lookups and O(chunk) inserts.
type Memory struct {
	chunks [][]entry
	n      int
	size   int64
	closed bool
	// changed maps each key changed since the last reset to whether it
	// existed at that reset; its current value is read from the index.
	// Its strings share the bytes of the store's own key copies (keyString),
	// so tracking a change allocates only when the map grows.
	changed map[string]bool
}

type entry struct {
	key   []byte
	value []byte
}

var (
	_ Store  = (*Memory)(nil)
	_ Seeker = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{changed: make(map[string]bool)}
}

// find returns the chunk index and the position in it of the first entry
// with a key >= key. ci == len(m.chunks) means past the end.
func (m *Memory) find(key []byte) (ci, pos int) {
	ci = sort.Search(len(m.chunks), func(i int) bool {
		c := m.chunks[i]
		return bytes.Compare(c[len(c)-1].key, key) >= 0
	})
	if ci == len(m.chunks) {
		return ci, 0
	}
	c := m.chunks[ci]
	pos = sort.Search(len(c), func(i int) bool { return bytes.Compare(c[i].key, key) >= 0 })
	return ci, pos
}

func (m *Memory) lookup(key []byte) (ci, pos int, ok bool) {
	ci, pos = m.find(key)
	if ci < len(m.chunks) && bytes.Equal(m.chunks[ci][pos].key, key) {
		return ci, pos, true
	}
	return ci, pos, false
}

// Get implements Store.
func (m *Memory) Get(key []byte) ([]byte, bool, error) {
	if m.closed {
		return nil, false, ErrClosed
	}
	ci, pos, ok := m.lookup(key)
	if !ok {
		return nil, false, nil
	}
	return m.chunks[ci][pos].value, true, nil
}

// Set implements Store.
func (m *Memory) Set(key, value []byte) error {
	if m.closed {
		return ErrClosed
	}
	stored, existed := m.put(key, value)
	m.track(stored, true, existed)
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(key []byte) error {
	if m.closed {
		return ErrClosed
	}
	if stored, existed := m.remove(key); existed {
		m.track(stored, true, true)
	} else {
		m.track(key, false, false)
	}
	return nil
}

// Restore implements Store.
func (m *Memory) Restore(key, value []byte) error {
	if m.closed {
		return ErrClosed
	}
	if value == nil {
		m.remove(key)
	} else {
		m.put(key, value)
	}
	return nil
}

// track records that key changed and whether it existed before (so at
// the last reset, when it is not tracked yet). own: key is the store's
// copy (never written to again, so the map may keep its bytes); else the
// caller's, copied.
func (m *Memory) track(key []byte, own, existed bool) {
	if _, seen := m.changed[string(key)]; seen {
		return
	}
	if own {
		m.changed[keyString(key)] = existed
		return
	}
	m.changed[string(key)] = existed
}

// keyString is key's bytes as a string without a copy. Only for the
// store's own key copies: Memory never writes to one after storing it,
// and a caller must not modify a slice the store hands out.
func keyString(key []byte) string {
	if len(key) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(key), len(key))
}

// put stores copies of key and value and reports whether key existed.
// stored is the store's copy of key.
func (m *Memory) put(key, value []byte) (stored []byte, existed bool) {
	v := make([]byte, len(value))
	copy(v, value)
	ci, pos, ok := m.lookup(key)
	if ok {
		e := &m.chunks[ci][pos]
		m.size += int64(len(v) - len(e.value))
		e.value = v
		return e.key, true
	}
	k := bytes.Clone(key)
	if k == nil {
		k = []byte{}
	}
	m.n++
	m.size += int64(len(k) + len(v))
	if len(m.chunks) == 0 {
		m.chunks = append(m.chunks, []entry{{k, v}})
		return k, false
	}
	if ci == len(m.chunks) { // greater than every key: append to the last chunk
		ci = len(m.chunks) - 1
		pos = len(m.chunks[ci])
	}
	c := slices.Insert(m.chunks[ci], pos, entry{k, v})
	if len(c) > maxChunk {
		half := len(c) / 2
		right := slices.Clone(c[half:])
		clear(c[half:])
		m.chunks[ci] = c[:half:half]
		m.chunks = slices.Insert(m.chunks, ci+1, right)
		return k, false
	}
	m.chunks[ci] = c
	return k, false
}

// remove deletes key and reports whether it existed; stored is the
// store's copy of the key it removed.
func (m *Memory) remove(key []byte) (stored []byte, existed bool) {
	ci, pos, ok := m.lookup(key)
	if !ok {
		return nil, false
	}
	c := m.chunks[ci]
	stored = c[pos].key
	m.n--
	m.size -= int64(len(c[pos].key) + len(c[pos].value))
	if pos < len(c)/2 {
		// Nearer the front (a timer's, deleted oldest first): shift the
		// entries before it instead of those after.
		copy(c[1:pos+1], c[:pos])
		c[0] = entry{}
		c = c[1:]
	} else {
		c = slices.Delete(c, pos, pos+1)
	}
	m.chunks[ci] = c
	switch {
	case len(c) == 0:
		m.chunks = slices.Delete(m.chunks, ci, ci+1)
	case len(c) < minChunk && ci+1 < len(m.chunks) && len(c)+len(m.chunks[ci+1]) <= maxChunk:
		m.chunks[ci] = append(c, m.chunks[ci+1]...)
		m.chunks = slices.Delete(m.chunks, ci+1, ci+2)
	case len(c) < minChunk && ci > 0 && len(c)+len(m.chunks[ci-1]) <= maxChunk:
		m.chunks[ci-1] = append(m.chunks[ci-1], c...)
		m.chunks = slices.Delete(m.chunks, ci, ci+1)
	}
	return stored, true
}

// Range implements Store.
func (m *Memory) Range(prefix []byte, fn func(key, value []byte) bool) error {
	return m.RangeFrom(prefix, prefix, fn)
}

// RangeFrom implements Seeker.
func (m *Memory) RangeFrom(prefix, start []byte, fn func(key, value []byte) bool) error {
	if m.closed {
		return ErrClosed
	}
	if bytes.Compare(start, prefix) < 0 {
		start = prefix
	}
	ci, pos := m.find(start)
	for ; ci < len(m.chunks); ci, pos = ci+1, 0 {
		c := m.chunks[ci]
		for ; pos < len(c); pos++ {
			if !bytes.HasPrefix(c[pos].key, prefix) || !fn(c[pos].key, c[pos].value) {
				return nil
			}
		}
	}
	return nil
}

// Len implements Store.
func (m *Memory) Len() int { return m.n }

// SizeBytes implements Store.
func (m *Memory) SizeBytes() int64 { return m.size }

// Changes implements Store.
func (m *Memory) Changes() []Change {
	if len(m.changed) == 0 {
		return nil
	}
	out := make([]Change, 0, len(m.changed))
	for k, existed := range m.changed {
		// A read-only view: lookup only compares it.
		ci, pos, ok := m.lookup(unsafe.Slice(unsafe.StringData(k), len(k)))
		switch {
		case ok:
			out = append(out, Change{Key: m.chunks[ci][pos].key, Value: m.chunks[ci][pos].value})
		case existed:
			out = append(out, Change{Key: []byte(k)})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return bytes.Compare(a.Key, b.Key) })
	return out
}

// ResetChanges implements Store. A large change set is dropped rather
// than cleared, so a burst does not pin its map's memory forever.
func (m *Memory) ResetChanges() {
	if len(m.changed) > 4096 {
		m.changed = make(map[string]bool)
		return
	}
	clear(m.changed)
}

// Close implements Store.
func (m *Memory) Close() error {
	m.closed = true
	m.chunks, m.changed = nil, nil
	return nil
}
