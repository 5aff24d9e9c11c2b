package lookup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sidestream/sidestream/internal/operator/statelimit"
	"github.com/sidestream/sidestream/internal/registry"
)

// Mode is how a table answers.
type Mode uint8

const (
	// Current answers with the latest row of a key.
	Current Mode = iota
	// AsOf answers with the version valid at the lookup's time.
	AsOf
)

// Result is what a lookup found.
type Result uint8

const (
	// Hit: a row was found.
	Hit Result = iota
	// Miss: the key has no row (at that time).
	Miss
	// TooOld: the time is before the table's history and the key changed
	// since; the row is the oldest version kept.
	TooOld
)

func (r Result) String() string {
	switch r {
	case Hit:
		return "hit"
	case Miss:
		return "miss"
	}
	return "too_old"
}

// Row is one row in the value model (registry.ExactNumbers): what an
// expression reads of it.
type Row = map[string]any

// Spec is a table's mode, history and limits.
type Spec struct {
	Mode Mode
	// History (AsOf): versions replaced longer ago than this, behind the
	// latest version time the table has seen, are dropped.
	History time.Duration
	// Limits bound the kept entries (keys in Current, versions in AsOf)
	// and their estimated bytes. Past a limit a new key is refused;
	// a key already kept is still updated (statelimit's admission rule).
	Limits statelimit.Limits
}

// version is one row of a key from its time on: its encoding (row.go),
// or the row itself when it holds a type the encoding has not (tree);
// both nil: a tombstone. size is its cost.
type version struct {
	at   int64
	enc  string
	tree Row
	size int64
}

func (v version) tombstone() bool { return v.enc == "" && v.tree == nil }

// Table is one lookup table. Its methods are safe for concurrent use.
type Table struct {
	spec    Spec
	history int64 // ms

	mu      sync.RWMutex
	cur     index                // Current: the rows by key (index.go)
	keys    map[string][]version // AsOf: the versions by key, sorted by at
	maxTime int64                // AsOf: the latest version time applied
	swept   int64                // AsOf: maxTime at the last sweep
	entries int
	bytes   int64
	refused uint64
	names   names  // the rows' field names (row.go)
	scratch []byte // the loader's encoding buffer
	// jsonTmp and jsonFields are ApplyJSON's buffers (jsonrow.go).
	jsonTmp    []byte
	jsonFields []jsonField
	// boxes are the values Field answers often (row.go), read and
	// written without the lock.
	boxes boxes
	// sink (a Pebble table's) is told every version kept and dropped;
	// nil for a table in memory only.
	sink sink
}

// sink mirrors what a table keeps: put a version (raw nil: a
// tombstone), drop one. Called under the table's lock, in order.
type sink interface {
	put(key string, at int64, raw []byte)
	drop(key string, at int64)
}

// New returns an empty table.
func New(spec Spec) (*Table, error) {
	if err := spec.Limits.Validate(); err != nil {
		return nil, err
	}
	if spec.Mode == AsOf && spec.History <= 0 {
		return nil, errors.New("an as-of table needs a positive history")
	}
	return &Table{spec: spec, history: spec.History.Milliseconds(), cur: newIndex(), keys: map[string][]version{}, maxTime: math.MinInt64, swept: math.MinInt64}, nil
}

// Apply applies one row of the table's topic, in the topic's order: the
// row of key from time at (the as_of version time; Current ignores it),
// row nil for a tombstone. It reports false when a limit refused a new
// key. The table keeps its own encoding of row, not row.
func (t *Table) Apply(key string, at int64, row Row) bool {
	return t.apply(key, at, row, nil)
}

// version is row's version at at in an as_of table, encoded with the
// table's names; the caller holds the lock.
func (t *Table) version(at int64, row Row) version {
	v := version{at: at}
	if row != nil {
		enc, ok := encodeRow(t.scratch[:0], &t.names, row)
		t.scratch = enc[:0]
		if ok {
			// A string: one allocation of the exact size (append's
			// slack would be heap the estimate does not count), and a
			// lookup's strings are parts of it, not copies.
			v.enc = string(enc)
		} else {
			v.tree = row
		}
	}
	v.size = versionCost(v.enc, v.tree, versionAsOfSlot)
	return v
}

// apply is Apply; raw is the row's encoding, given to the sink.
func (t *Table) apply(key string, at int64, row Row, raw []byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spec.Mode == Current {
		if !t.setCurrent(key, row, true) {
			return false
		}
		if t.sink != nil {
			t.sink.put(key, 0, raw)
		}
		return true
	}
	v := t.version(at, row)
	vs, known := t.keys[key]
	cost := v.size
	if !known {
		cost += keyCost(key)
	}
	if !known && !t.admit(cost) {
		t.advance(at)
		return false
	}
	if !known {
		t.bytes += keyCost(key)
	}
	t.keys[key] = t.insert(vs, v)
	if t.sink != nil {
		t.sink.put(key, at, raw)
	}
	t.advance(at)
	t.prune(key)
	return true
}

// setCurrent makes row key's row in a current table (row nil: deletes
// it); false when the limits refused a new key (checked when check is
// set: a restore keeps what was admitted). The caller holds the lock.
func (t *Table) setCurrent(key string, row Row, check bool) bool {
	i := t.cur.get(key)
	if row == nil {
		if i >= 0 {
			e := t.cur.at(i)
			t.bytes -= e.size
			t.entries--
			if t.sink != nil {
				t.sink.drop(key, 0)
			}
			t.cur.remove(i)
		}
		return true
	}
	return t.setEntry(key, t.entry(key, row), check)
}

// setEntry makes e key's entry in a current table, as setCurrent.
func (t *Table) setEntry(key string, e entry, check bool) bool {
	i := t.cur.get(key)
	if i >= 0 {
		t.bytes += e.size - t.cur.at(i).size
		t.cur.set(i, e)
		return true
	}
	if check && !t.admit(e.size) {
		return false
	}
	t.cur.add(e)
	t.bytes += e.size
	t.entries++
	return true
}

// entry is key's entry of row, encoded with the table's names; the
// caller holds the lock.
func (t *Table) entry(key string, row Row) entry {
	b := append(t.scratch[:0], key...)
	b, ok := encodeRow(b, &t.names, row)
	t.scratch = b[:0]
	e := entry{klen: uint32(len(key))}
	if ok {
		// One allocation of the exact size, as version's.
		e.data = string(b)
	} else {
		e.data, e.tree = key, row
	}
	e.size = currentCost(len(e.data), e.tree)
	return e
}

// admit says whether a new key fits the limits.
func (t *Table) admit(cost int64) bool {
	l := t.spec.Limits
	if !l.Enabled() {
		return true
	}
	if t.spec.Mode == Current {
		cost += t.cur.bytes(t.cur.len() + 1) // the slots, grown if they must
	}
	if (l.MaxEntries > 0 && t.entries+1 > l.MaxEntries) || (l.MaxBytes > 0 && t.bytes+cost > l.MaxBytes) {
		t.refused++
		return false
	}
	return true
}

// insert puts v in its place by time; one of the same time is replaced
// (the later in the topic wins).
func (t *Table) insert(vs []version, v version) []version {
	i := sort.Search(len(vs), func(i int) bool { return vs[i].at >= v.at })
	if i < len(vs) && vs[i].at == v.at {
		t.bytes += v.size - vs[i].size
		vs[i] = v
		return vs
	}
	t.bytes += v.size
	t.entries++
	vs = append(vs, version{})
	copy(vs[i+1:], vs[i:])
	vs[i] = v
	return vs
}

// horizon is the oldest time the table answers exactly for every key:
// the latest version time less the history.
func (t *Table) horizon() int64 {
	if t.maxTime == math.MinInt64 {
		return math.MinInt64
	}
	return t.maxTime - t.history
}

// advance moves the latest version time; every quarter history it moves,
// every key is pruned, so memory follows the history and not only the
// keys that change.
func (t *Table) advance(at int64) {
	if at <= t.maxTime {
		return
	}
	t.maxTime = at
	if t.swept != math.MinInt64 && t.maxTime-t.swept < max(t.history/4, 1) {
		return
	}
	t.swept = t.maxTime
	for k := range t.keys {
		t.prune(k)
	}
}

// prune drops what no lookup can read any more: the versions before the
// one valid at the horizon, and that one too when it is a tombstone
// (lookups before it then miss, as they do without it).
func (t *Table) prune(key string) {
	vs := t.keys[key]
	h := t.horizon()
	j := sort.Search(len(vs), func(i int) bool { return vs[i].at > h }) - 1 // the version valid at h
	if j > 0 || (j == 0 && vs[0].tombstone()) {
		cut := j
		if vs[j].tombstone() {
			cut = j + 1
		}
		for _, v := range vs[:cut] {
			t.bytes -= v.size
			if t.sink != nil {
				t.sink.drop(key, v.at)
			}
		}
		t.entries -= cut
		vs = append(vs[:0:0], vs[cut:]...)
		if len(vs) == 0 {
			t.bytes -= keyCost(key)
			delete(t.keys, key)
			return
		}
		t.keys[key] = vs
	}
}

// Get is the row of key at time at (epoch ms; Current ignores it): a
// map of its own, decoded from what the table keeps.
func (t *Table) Get(key string, at int64) (Row, Result) {
	t.mu.RLock()
	var v version
	res := Miss
	if t.spec.Mode == Current {
		if i := t.cur.get(key); i >= 0 {
			v, res = t.cur.version(i), Hit
		}
	} else {
		v, res = answer(t.keys[key], at, t.horizon())
	}
	names := t.names.list
	t.mu.RUnlock()
	if res == Miss {
		return nil, Miss
	}
	return v.row(names), res
}

// Field is one top-level field of key's row at time at, as the row Get
// answers would hold it (nil when the row has no such field), read
// without decoding the rest of the row: what lookup("t", k)?.name needs
// (config.TableField). key is the key's bytes (AppendKey); the table
// keeps no reference to them.
func (t *Table) Field(key []byte, at int64, name string) (any, Result) {
	t.mu.RLock()
	var v version
	res := Miss
	if t.spec.Mode == Current {
		if i := t.cur.getBytes(key); i >= 0 {
			v, res = t.cur.version(i), Hit
		}
	} else {
		v, res = answer(t.keys[string(key)], at, t.horizon())
	}
	names := t.names.list
	t.mu.RUnlock()
	if res == Miss {
		return nil, Miss
	}
	if v.enc == "" {
		return v.tree[name], res
	}
	return t.boxes.value(fieldEncoding(v.enc, names, name), names), res
}

// each calls f with every key kept and its versions (in a current
// table, its one version); the caller holds the lock. For tests.
func (t *Table) each(f func(key string, vs []version)) {
	t.cur.each(func(e entry) { f(e.key(), []version{e.version()}) })
	for k, vs := range t.keys {
		f(k, vs)
	}
}

// row is the version's row in the value model (nil: a tombstone).
func (v version) row(names []string) Row {
	if v.enc == "" {
		return v.tree
	}
	return decodeRow(v.enc, names)
}

// answer is the as-of rule over a key's versions (sorted by time) with
// horizon h: at or after h, the version valid at at; before h, the
// version valid at h when it was valid at at too, else that version
// marked TooOld. A tombstone, or no version, is a miss.
func answer(vs []version, at, h int64) (version, Result) {
	if at >= h {
		i := sort.Search(len(vs), func(i int) bool { return vs[i].at > at }) - 1
		if i < 0 || vs[i].tombstone() {
			return version{}, Miss
		}
		return vs[i], Hit
	}
	i := sort.Search(len(vs), func(i int) bool { return vs[i].at > h }) - 1
	switch {
	case i < 0 || vs[i].tombstone():
		return version{}, Miss
	case vs[i].at <= at:
		return vs[i], Hit
	}
	return vs[i], TooOld
}

// Size is the entries kept (keys in Current, versions in AsOf) and their
// estimated bytes.
func (t *Table) Size() (entries int, bytes int64) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.entries, t.bytes + t.cur.bytes(t.cur.len())
}

// Refused is how many new keys the limits refused.
func (t *Table) Refused() uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.refused
}

// Decode reads a JSON row into the value model, as stage one reads an
// input's fields: a JSON object, numbers exact.
func Decode(raw []byte) (Row, error) {
	var v any
	dec := json.NewDecoder(bytesReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("row is not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("row holds more than one JSON value")
	}
	row, ok := registry.ExactNumbers(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("row is a JSON %T, not an object", v)
	}
	return row, nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// AppendKey appends KeyString(k) to b, without allocating for the
// common keys (strings, integers); ok as KeyString's.
func AppendKey(b []byte, k any) ([]byte, bool) {
	switch v := k.(type) {
	case string:
		return append(b, v...), true
	case []byte:
		return append(b, v...), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	}
	s, ok := KeyString(k)
	return append(b, s...), ok
}

// KeyString is a lookup key as rows are keyed (their Kafka key, or their
// key field, as text): a string as it is, an integer in decimal, a
// boolean as true or false. ok is false for nil and for values no row
// key can equal (objects, lists, fractions).
func KeyString(k any) (string, bool) {
	switch v := k.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return strconv.FormatInt(int64(v), 10), true
		}
	case bool:
		return strconv.FormatBool(v), true
	case json.Number:
		return v.String(), true
	}
	return "", false
}
