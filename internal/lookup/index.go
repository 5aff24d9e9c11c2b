package lookup

import "hash/maphash"

// index is a current-mode table's rows by key, laid out for lookups on
// keys spread over a table larger than the CPU cache. A Go map of
// string to []version cost up to five dependent cache misses a hit (the
// map's slot, the key's bytes, the versions' slice, the row's bytes);
// here a hit costs about three: its slot in slots (8 bytes: the key
// hash's low 32 bits and the entry's number, so a probe compares hashes
// without leaving the slice), its entry, and the entry's data, where the
// key's bytes and the row's encoding sit together in one string.
//
// slots is open addressing with linear probing; a removal shifts the
// probe sequence back (no tombstones), and the last entry moves into the
// removed one's place, so entries stay dense. A slot's home is its
// stored hash bits under the mask: growing and shifting never hash a key
// again (the table stays below 2^32 slots).
type index struct {
	seed    maphash.Seed
	slots   []uint64 // 0: empty; else hash low 32 bits << 32 | entry number + 1
	entries []entry
}

// entry is one key's row: data is the key's bytes then the row's
// encoding (row.go), or the key alone when the row is kept as its map
// (tree). size is its estimated heap (currentCost).
type entry struct {
	data string
	klen uint32
	hash uint32 // the key hash's low 32 bits, as its slot holds them
	tree Row
	size int64
}

func (e *entry) key() string { return e.data[:e.klen] }

// version is the entry's row as a current table's version.
func (e *entry) version() version {
	return version{enc: e.data[e.klen:], tree: e.tree, size: e.size}
}

// The load past which slots double: 3/4, so that a miss (about one in
// ten of the benchmarks' lookups) scans a short run, mostly in one
// cache line.
const (
	loadNum = 3
	loadDen = 4
)

func newIndex() index { return index{seed: maphash.MakeSeed()} }

func (ix *index) len() int { return len(ix.entries) }

// get is key's entry number, -1 when it has none.
func (ix *index) get(key string) int {
	if len(ix.slots) == 0 {
		return -1
	}
	h := uint32(maphash.String(ix.seed, key))
	mask := uint32(len(ix.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := ix.slots[p]
		if s == 0 {
			return -1
		}
		if uint32(s>>32) == h {
			i := int(uint32(s)) - 1
			if e := &ix.entries[i]; e.data[:e.klen] == key {
				return i
			}
		}
	}
}

// getBytes is get of a key given as bytes, without copying them.
func (ix *index) getBytes(key []byte) int {
	if len(ix.slots) == 0 {
		return -1
	}
	h := uint32(maphash.Bytes(ix.seed, key))
	mask := uint32(len(ix.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := ix.slots[p]
		if s == 0 {
			return -1
		}
		if uint32(s>>32) == h {
			i := int(uint32(s)) - 1
			if e := &ix.entries[i]; e.data[:e.klen] == string(key) {
				return i
			}
		}
	}
}

// add appends e, whose key the index has not; e.hash is set here.
func (ix *index) add(e entry) {
	if (len(ix.entries)+1)*loadDen > len(ix.slots)*loadNum {
		ix.grow()
	}
	e.hash = uint32(maphash.String(ix.seed, e.key()))
	ix.entries = append(ix.entries, e)
	ix.place(e.hash, len(ix.entries))
}

// place puts the slot of entry number n-1 in the first free place of
// its probe sequence.
func (ix *index) place(h uint32, n int) {
	mask := uint32(len(ix.slots) - 1)
	p := h & mask
	for ix.slots[p] != 0 {
		p = (p + 1) & mask
	}
	ix.slots[p] = uint64(h)<<32 | uint64(n)
}

func (ix *index) grow() {
	old := ix.slots
	ix.slots = make([]uint64, max(16, 2*len(old)))
	for _, s := range old {
		if s != 0 {
			ix.place(uint32(s>>32), int(uint32(s)))
		}
	}
}

// slotOf is the place of entry i's slot.
func (ix *index) slotOf(i int) uint32 {
	mask := uint32(len(ix.slots) - 1)
	p := ix.entries[i].hash & mask
	for uint32(ix.slots[p]) != uint32(i+1) {
		p = (p + 1) & mask
	}
	return p
}

// remove drops entry i: its slot, with the slots after it in its run
// shifted back where their probe allows (Knuth's algorithm R), and the
// last entry moved into its place.
func (ix *index) remove(i int) {
	mask := uint32(len(ix.slots) - 1)
	hole := ix.slotOf(i)
	for j := (hole + 1) & mask; ix.slots[j] != 0; j = (j + 1) & mask {
		home := uint32(ix.slots[j]>>32) & mask
		// The slot at j may fill the hole unless its home lies
		// cyclically in (hole, j].
		if (j > hole && (home <= hole || home > j)) || (j < hole && home <= hole && home > j) {
			ix.slots[hole] = ix.slots[j]
			hole = j
		}
	}
	ix.slots[hole] = 0
	last := len(ix.entries) - 1
	if i != last {
		p := ix.slotOf(last)
		ix.entries[i] = ix.entries[last]
		ix.slots[p] = ix.slots[p]&^0xffffffff | uint64(i+1)
	}
	ix.entries[last] = entry{}
	ix.entries = ix.entries[:last]
}
