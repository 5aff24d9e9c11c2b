package lookup

import "hash/maphash"

// index is a current-mode table's rows by key, laid out for lookups on
// keys spread over a table larger than the CPU cache. A Go map of
// string to []version cost up to five dependent cache misses a hit (the
// map's slot, the key's bytes, the versions' slice, the row's bytes);
// here a hit costs about two: its slot (24 bytes: the data string and
// the key hash's upper bits, so a probe compares hashes without leaving
// the slice), and the slot's data, where the key's bytes and the row's
// encoding sit together in one string.
//
// slots is open addressing with linear probing; a removal shifts the
// probe sequence back (no tombstones). A slot's home is its stored hash
// under the mask: growing and shifting never hash a key again (the
// table stays below 2^31 slots). A row kept as its map (a type the
// encoding has not; rare) sits in trees, its slot's data the key alone.
type index struct {
	seed  maphash.Seed
	slots []slot
	n     int
	trees map[string]treeRow
}

// slot is one key's: data is the key's bytes then the row's encoding
// (row.go), or the key alone for a row in trees (an encoding is never
// empty). hash is the key hash's low 31 bits with the top bit set; 0:
// an empty slot.
type slot struct {
	data string
	hash uint32
	klen uint32
}

type treeRow struct {
	row  Row
	size int64 // treeSize(row) when it was kept
}

// entry is one key's row as the table gives and takes it: size is its
// estimated heap (currentCost).
type entry struct {
	data string
	klen uint32
	tree Row
	size int64
}

func (e *entry) key() string { return e.data[:e.klen] }

// version is the entry's row as a current table's version.
func (e *entry) version() version {
	return version{enc: e.data[e.klen:], tree: e.tree, size: e.size}
}

// The load past which slots double: 3/4, so that a miss (about one in
// ten of the benchmarks' lookups) scans a short run.
const (
	loadNum = 3
	loadDen = 4
	usedBit = 1 << 31
)

func newIndex() index { return index{seed: maphash.MakeSeed()} }

func (ix *index) len() int { return ix.n }

// get is the place of key's slot, -1 when it has none.
func (ix *index) get(key string) int {
	if len(ix.slots) == 0 {
		return -1
	}
	h := uint32(maphash.String(ix.seed, key)) | usedBit
	mask := uint32(len(ix.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := &ix.slots[p]
		if s.hash == 0 {
			return -1
		}
		if s.hash == h && s.data[:s.klen] == key {
			return int(p)
		}
	}
}

// getBytes is get of a key given as bytes, without copying them.
func (ix *index) getBytes(key []byte) int {
	if len(ix.slots) == 0 {
		return -1
	}
	h := uint32(maphash.Bytes(ix.seed, key)) | usedBit
	mask := uint32(len(ix.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := &ix.slots[p]
		if s.hash == 0 {
			return -1
		}
		if s.hash == h && s.data[:s.klen] == string(key) {
			return int(p)
		}
	}
}

// at is the entry of the slot at p.
func (ix *index) at(p int) entry {
	s := &ix.slots[p]
	e := entry{data: s.data, klen: s.klen, size: currentCost(len(s.data), nil)}
	if int(s.klen) == len(s.data) {
		t := ix.trees[s.data]
		e.tree, e.size = t.row, e.size+t.size
	}
	return e
}

// version is the row of the slot at p as a current table's version,
// without its size (a lookup's read).
func (ix *index) version(p int) version {
	s := &ix.slots[p]
	if int(s.klen) == len(s.data) {
		return version{tree: ix.trees[s.data].row}
	}
	return version{enc: s.data[s.klen:]}
}

// set makes e (of the same key) the entry of the slot at p.
func (ix *index) set(p int, e entry) {
	ix.keepTree(e)
	s := &ix.slots[p]
	s.data = e.data
}

// keepTree keeps or forgets e's row in trees.
func (ix *index) keepTree(e entry) {
	if e.tree != nil {
		if ix.trees == nil {
			ix.trees = map[string]treeRow{}
		}
		ix.trees[e.data] = treeRow{e.tree, e.size - currentCost(len(e.data), nil)}
	} else if ix.trees != nil {
		delete(ix.trees, e.key())
	}
}

// add adds e, whose key the index has not.
func (ix *index) add(e entry) {
	if (ix.n+1)*loadDen > len(ix.slots)*loadNum {
		ix.grow()
	}
	ix.keepTree(e)
	ix.place(slot{data: e.data, klen: e.klen, hash: uint32(maphash.String(ix.seed, e.key())) | usedBit})
	ix.n++
}

// place puts s in the first free place of its probe sequence.
func (ix *index) place(s slot) {
	mask := uint32(len(ix.slots) - 1)
	p := s.hash & mask
	for ix.slots[p].hash != 0 {
		p = (p + 1) & mask
	}
	ix.slots[p] = s
}

func (ix *index) grow() {
	old := ix.slots
	ix.slots = make([]slot, max(16, 2*len(old)))
	for _, s := range old {
		if s.hash != 0 {
			ix.place(s)
		}
	}
}

// remove drops the slot at p, with the slots after it in its run
// shifted back where their probe allows (Knuth's algorithm R).
func (ix *index) remove(p int) {
	if s := &ix.slots[p]; int(s.klen) == len(s.data) {
		delete(ix.trees, s.data)
	}
	mask := uint32(len(ix.slots) - 1)
	hole := uint32(p)
	for j := (hole + 1) & mask; ix.slots[j].hash != 0; j = (j + 1) & mask {
		home := ix.slots[j].hash & mask
		// The slot at j may fill the hole unless its home lies
		// cyclically in (hole, j].
		if (j > hole && (home <= hole || home > j)) || (j < hole && home <= hole && home > j) {
			ix.slots[hole] = ix.slots[j]
			hole = j
		}
	}
	ix.slots[hole] = slot{}
	ix.n--
}

// slotSize is a slot's bytes.
const slotSize = 24

// bytes is the heap the slots take, once n keys are kept.
func (ix *index) bytes(n int) int64 {
	l := len(ix.slots)
	for n*loadDen > l*loadNum {
		l = max(16, 2*l)
	}
	return int64(l) * slotSize
}

// each calls f with every entry.
func (ix *index) each(f func(entry)) {
	for p := range ix.slots {
		if ix.slots[p].hash != 0 {
			f(ix.at(p))
		}
	}
}
