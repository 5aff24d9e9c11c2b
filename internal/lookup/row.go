package lookup

import (
	"encoding/binary"
	"math"
	"sort"
	"strings"
	"sync/atomic"
)

// A kept row is one flat byte slice (no pointers for the collector to
// follow), its field names interned per table: a 100,000-row table of
// decoded maps was ~24 objects a row that every GC cycle marked, and
// ~680 bytes of heap a row. A lookup decodes the row it answers with
// into the value model again (decodeRow), one map per answer.
//
// The encoding of a value is a tag and its payload: an int or int64 as
// a zigzag varint, a float64 as 8 bytes, a string as its length and
// bytes, a map as its length and (name id, value) pairs, a list as its
// length and values. A row holding any other type (none of the value
// model) is kept as its map (version.tree).
const (
	tagNil byte = iota
	tagFalse
	tagTrue
	tagInt
	tagInt64
	tagFloat
	tagString
	tagMap
	tagList
)

// maxNames bounds a table's interned names: rows whose maps are keyed
// by data (ids as field names) would otherwise grow them without end.
// Past it a new name is written in the row itself.
const maxNames = 4096

// names are a table's interned field names: a name's id is its index.
type names struct {
	list []string
	ids  map[string]uint32
}

// appendName appends name's reference: its id + 1, or 0 and the name
// itself when the table interns no more names.
func (n *names) appendName(b []byte, name string) []byte {
	id, ok := n.ids[name]
	if !ok && len(n.list) < maxNames {
		if n.ids == nil {
			n.ids = map[string]uint32{}
		}
		id, ok = uint32(len(n.list)), true
		n.list = append(n.list, name)
		n.ids[name] = id
	}
	if ok {
		return binary.AppendUvarint(b, uint64(id)+1)
	}
	b = binary.AppendUvarint(b, 0)
	b = binary.AppendUvarint(b, uint64(len(name)))
	return append(b, name...)
}

// appendNameBytes is appendName of a name given as bytes, copied only
// when the table interns it.
func (n *names) appendNameBytes(b []byte, name []byte) []byte {
	if id, ok := n.ids[string(name)]; ok {
		return binary.AppendUvarint(b, uint64(id)+1)
	}
	return n.appendName(b, string(name))
}

// encodeRow appends row's encoding to b; ok is false when a value is of
// no type the encoding has.
func encodeRow(b []byte, n *names, row Row) ([]byte, bool) {
	return encodeValue(b, n, row)
}

func encodeValue(b []byte, n *names, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, tagNil), true
	case bool:
		if x {
			return append(b, tagTrue), true
		}
		return append(b, tagFalse), true
	case int:
		return binary.AppendVarint(append(b, tagInt), int64(x)), true
	case int64:
		return binary.AppendVarint(append(b, tagInt64), x), true
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat), math.Float64bits(x)), true
	case string:
		b = binary.AppendUvarint(append(b, tagString), uint64(len(x)))
		return append(b, x...), true
	case map[string]any:
		return encodeMap(b, n, x)
	case []any:
		b = binary.AppendUvarint(append(b, tagList), uint64(len(x)))
		for _, e := range x {
			var ok bool
			if b, ok = encodeValue(b, n, e); !ok {
				return b, false
			}
		}
		return b, true
	}
	return b, false
}

// encodeMap writes the fields sorted by name, so one row always has one
// encoding.
func encodeMap(b []byte, n *names, m map[string]any) ([]byte, bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = binary.AppendUvarint(append(b, tagMap), uint64(len(m)))
	for _, k := range keys {
		b = n.appendName(b, k)
		var ok bool
		if b, ok = encodeValue(b, n, m[k]); !ok {
			return b, false
		}
	}
	return b, true
}

// rowReader decodes one encoded row, kept as a string: the strings it
// returns are parts of it, no copies.
type rowReader struct {
	s     string
	i     int
	names []string
}

// decodeRow is the row that enc encodes, names the table's interned
// names (only ever appended to, so a copy of the slice read under the
// lock stays valid after it).
func decodeRow(enc string, names []string) Row {
	r := rowReader{s: enc, names: names}
	m, _ := r.value().(map[string]any)
	return m
}

// decodeField is the top-level field name of the row enc encodes, as
// decodeRow's map would hold it (nil when it has none), decoding that
// field's value only.
func decodeField(enc string, names []string, name string) any {
	f := fieldEncoding(enc, names, name)
	if f == "" {
		return nil
	}
	r := rowReader{s: f, names: names}
	return r.value()
}

// fieldEncoding is the encoding of the top-level field name of the row
// enc encodes, a part of enc ("" when it has none).
func fieldEncoding(enc string, names []string, name string) string {
	r := rowReader{s: enc, names: names}
	if r.s[r.i] != tagMap {
		return ""
	}
	r.i++
	for l := r.uvarint(); l > 0; l-- {
		if r.name() == name {
			start := r.i
			r.skip()
			return enc[start:r.i]
		}
		r.skip()
	}
	return ""
}

// boxes are the scalar values a table's Field answered more than once
// lately, already in interfaces: a string or an integer past 255 put in
// an interface is an allocation, and a field read per record (a user's
// tier, a region) takes few values. A value is kept on its second
// sighting in its set, so a field of many values (a name, an id) costs
// a lookup no more than its one allocation. Shared by a table's readers,
// so its slots are atomic; a kept string is a copy, not a part of its
// row.
type boxes struct {
	seen [boxSets]atomic.Uint32 // the hash last sighted, 0: none
	kept [boxSets]atomic.Pointer[boxed]
}

type boxed struct {
	enc string // the value's encoding
	v   any
}

const (
	boxSets   = 64
	maxBoxEnc = 32 // longer encodings are decoded each time
)

// value is the value f encodes (a field's encoding, fieldEncoding's),
// from the kept ones when it is there.
func (b *boxes) value(f string, names []string) any {
	if len(f) == 0 {
		return nil
	}
	switch f[0] {
	case tagString, tagInt, tagInt64, tagFloat:
	default:
		r := rowReader{s: f, names: names}
		return r.value()
	}
	if len(f) > maxBoxEnc {
		r := rowReader{s: f, names: names}
		return r.value()
	}
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(f); i++ {
		h = (h ^ uint32(f[i])) * 16777619
	}
	h |= 1
	set := h % boxSets
	if k := b.kept[set].Load(); k != nil && k.enc == f {
		return k.v
	}
	r := rowReader{s: f, names: names}
	v := r.value()
	if b.seen[set].Swap(h) == h {
		if s, ok := v.(string); ok {
			v = strings.Clone(s)
		}
		b.kept[set].Store(&boxed{enc: strings.Clone(f), v: v})
	}
	return v
}

// skip passes over the next value.
func (r *rowReader) skip() {
	tag := r.s[r.i]
	r.i++
	switch tag {
	case tagInt, tagInt64:
		r.uvarint()
	case tagFloat:
		r.i += 8
	case tagString:
		r.i += int(r.uvarint())
	case tagMap:
		for l := r.uvarint(); l > 0; l-- {
			r.name()
			r.skip()
		}
	case tagList:
		for l := r.uvarint(); l > 0; l-- {
			r.skip()
		}
	}
}

func (r *rowReader) uvarint() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		b := r.s[r.i]
		r.i++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v
		}
	}
}

func (r *rowReader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// str is the next l bytes.
func (r *rowReader) str(l int) string {
	v := r.s[r.i : r.i+l]
	r.i += l
	return v
}

func (r *rowReader) name() string {
	if id := r.uvarint(); id > 0 {
		return r.names[id-1]
	}
	return r.str(int(r.uvarint()))
}

func (r *rowReader) value() any {
	tag := r.s[r.i]
	r.i++
	switch tag {
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagInt:
		return int(r.varint())
	case tagInt64:
		return r.varint()
	case tagFloat:
		var u uint64
		for k := 7; k >= 0; k-- {
			u = u<<8 | uint64(r.s[r.i+k])
		}
		r.i += 8
		return math.Float64frombits(u)
	case tagString:
		return r.str(int(r.uvarint()))
	case tagMap:
		l := int(r.uvarint())
		m := make(map[string]any, l)
		for range l {
			name := r.name()
			m[name] = r.value()
		}
		return m
	case tagList:
		l := int(r.uvarint())
		out := make([]any, l)
		for i := range out {
			out[i] = r.value()
		}
		return out
	}
	return nil
}

// What a table keeps costs in Go's heap, the estimate that
// sidestream_table_bytes reports and limits.max_bytes bounds;
// TestHeapEstimate holds it to runtime.MemStats. A current table
// (index.go) costs its slots (24 bytes each, empty or not) and each
// key's data allocation (key and row together). In an as_of table a
// key costs its
// string and its slot in the table's map (a 40-byte slot of a swiss
// map, whose load varies between 7/16 and 7/8 as it grows: about 80
// bytes on average, measured from 10,000 to 1,000,000 keys). A version
// costs its encoding's allocation and its place in the key's versions:
// 48 bytes, and in an as_of table about a sixth more for the slack of
// a growing slice (its capacity doubles: 1, 2, 4, 8...).
const (
	keyOverhead     = 80
	versionAsOfSlot = 56
)

// currentCost is the heap a current table's entry takes (index.go)
// beside its slot: its data's allocation of n bytes (the key and the
// row's encoding), and the row's map with its place in the index's
// trees when it is kept as one. The slots are counted whole
// (index.bytes): their load moves between 3/8 and 3/4 as they double,
// which no cost a key can average within TestHeapEstimate's tolerance.
func currentCost(n int, tree Row) int64 {
	c := int64(allocSize(n))
	if tree != nil {
		c += treeSize(tree) + keyOverhead
	}
	return c
}

// keyCost is the heap a kept key takes beside its versions.
func keyCost(key string) int64 { return int64(allocSize(len(key))) + keyOverhead }

// versionCost is the heap a version takes: its encoding (or its row
// kept as a map) and its place, slot bytes.
func versionCost(enc string, tree Row, slot int64) int64 {
	c := int64(allocSize(len(enc))) + slot
	if tree != nil {
		c += treeSize(tree)
	}
	return c
}

// treeSize is about what a decoded value takes in the heap (a row kept
// as its map): a map's header and groups, a boxed scalar, a string's
// bytes.
func treeSize(v any) int64 {
	switch x := v.(type) {
	case map[string]any:
		groups := (len(x) + 6) / 7
		s := int64(48 + allocSize(groups*(8+8*32)))
		for k, e := range x {
			s += int64(allocSize(len(k))) + 16 + treeSize(e)
		}
		return s
	case []any:
		s := int64(24 + allocSize(16*len(x)))
		for _, e := range x {
			s += treeSize(e)
		}
		return s
	case string:
		return int64(16 + allocSize(len(x)))
	case nil, bool:
		return 0
	}
	return 16
}

// sizeClasses are Go's small allocation sizes (the runtime's size class table).
var sizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240,
	10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocSize is the heap an allocation of n bytes takes (0 for none).
func allocSize(n int) int {
	if n == 0 {
		return 0
	}
	if n > sizeClasses[len(sizeClasses)-1] {
		return (n + 8191) &^ 8191
	}
	return sizeClasses[sort.SearchInts(sizeClasses[:], n)]
}
