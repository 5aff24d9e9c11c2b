package lookup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/cockroachdb/pebble"
)

// Key spaces of a table's Pebble database: every kept version under
// dataNS, the fingerprint, checkpoint and latest version time under
// metaNS.
const (
	dataNS = 'd'
	metaNS = 'm'
)

var (
	metaFingerprint = []byte{metaNS, 'f'}
	metaCheckpoint  = []byte{metaNS, 'c'}
	metaMaxTime     = []byte{metaNS, 't'}
)

// Version values: a row's encoding follows valRow; a tombstone is
// valTombstone alone.
const (
	valRow       = 'r'
	valTombstone = 't'
)

// Durable is a table whose kept versions are mirrored in a Pebble
// database on disk, with a checkpoint (the caller's position in the
// table's topic) written in the same batch: the database always holds
// exactly the table as it was at some checkpoint, so a restart opens it
// and reads the topic only from there. Lookups read the table in memory
// as a memory table's do.
//
// Apply, Commit, Wipe and Close are for one goroutine (the loader);
// Get and Size are safe beside them.
type Durable struct {
	*Table
	db     *pebble.DB
	b      *pebble.Batch // the versions applied since the last Commit
	fp     []byte
	ckpt   []byte
	err    error // the first failed write to b, returned by Commit
	kbuf   []byte
	decode func([]byte) (Row, error)
}

// OpenPebble opens (creating it if needed) the Pebble table in dir.
// fingerprint names what the stored rows were built from (the topic, the
// key, the mode, the history, the limits...): a database built from
// another is wiped and reason says so ("" when the stored table was
// restored, or the database is new). decode reads a stored row as the
// loader decoded it.
func OpenPebble(dir string, spec Spec, fingerprint string, decode func([]byte) (Row, error)) (d *Durable, reason string, err error) {
	t, err := New(spec)
	if err != nil {
		return nil, "", err
	}
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, "", fmt.Errorf("open table store %s: %w", dir, err)
	}
	d = &Durable{Table: t, db: db, b: db.NewBatch(), fp: []byte(fingerprint), decode: decode}
	t.sink = d
	old, ok, err := d.meta(metaFingerprint)
	switch {
	case err != nil:
		_ = db.Close()
		return nil, "", fmt.Errorf("open table store %s: %w", dir, err)
	case !ok: // a new store
	case !bytes.Equal(old, d.fp):
		reason = "the table's settings changed"
	default:
		var found bool
		if found, err = d.restore(); err != nil {
			reason = fmt.Sprintf("its store is unreadable (%v)", err)
		}
		ok = found
	}
	if !ok || reason != "" {
		if err := d.Wipe(); err != nil {
			_ = db.Close()
			return nil, "", err
		}
	}
	return d, reason, nil
}

// meta reads one meta key; ok is false when it is missing.
func (d *Durable) meta(k []byte) ([]byte, bool, error) {
	v, c, err := d.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer c.Close()
	return bytes.Clone(v), true, nil
}

// restore reads the stored versions, the latest version time and the
// checkpoint into the table; found is false when no checkpoint was
// ever committed (the store is as new).
func (d *Durable) restore() (found bool, err error) {
	ck, ok, err := d.meta(metaCheckpoint)
	if err != nil || !ok {
		return false, err
	}
	mt, ok, err := d.meta(metaMaxTime)
	if err != nil || !ok || len(mt) != 8 {
		return true, errors.Join(err, errors.New("no latest version time"))
	}
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: []byte{dataNS}, UpperBound: []byte{dataNS + 1}})
	if err != nil {
		return true, err
	}
	t := d.Table
	for ok := it.First(); ok; ok = it.Next() {
		key, at, kerr := parseDataKey(it.Key())
		row, verr := d.parseValue(it.Value())
		if err := errors.Join(kerr, verr); err != nil {
			_ = it.Close()
			return true, err
		}
		t.restore(key, at, row)
	}
	if err := it.Close(); err != nil {
		return true, err
	}
	t.maxTime = int64(binary.BigEndian.Uint64(mt))
	t.swept = t.maxTime
	d.ckpt = ck
	return true, nil
}

func (d *Durable) parseValue(v []byte) (Row, error) {
	switch {
	case len(v) == 1 && v[0] == valTombstone:
		return nil, nil
	case len(v) > 0 && v[0] == valRow:
		return d.decode(v[1:])
	}
	return nil, errors.New("a stored version is malformed")
}

// restore puts a stored version back, as Apply had kept it.
func (t *Table) restore(key string, at int64, row Row) {
	if t.spec.Mode == Current {
		t.setCurrent(key, row, false)
		return
	}
	vs, known := t.keys[key]
	if !known {
		t.bytes += keyCost(key)
	}
	t.keys[key] = t.insert(vs, t.version(at, row))
}

// dataKey is dataNS, the key's length, the key and the version time
// (big-endian, sign flipped, so versions sort by time).
func (d *Durable) dataKey(key string, at int64) []byte {
	b := append(d.kbuf[:0], dataNS)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.BigEndian.AppendUint64(b, uint64(at)^(1<<63))
	d.kbuf = b
	return b
}

func parseDataKey(k []byte) (string, int64, error) {
	n, w := binary.Uvarint(k[1:])
	if w <= 0 || len(k) != 1+w+int(n)+8 {
		return "", 0, errors.New("a stored key is malformed")
	}
	key := string(k[1+w : 1+w+int(n)])
	return key, int64(binary.BigEndian.Uint64(k[1+w+int(n):]) ^ (1 << 63)), nil
}

// put implements sink.
func (d *Durable) put(key string, at int64, raw []byte) {
	v := []byte{valTombstone}
	if raw != nil {
		v = append([]byte{valRow}, raw...)
	}
	if err := d.b.Set(d.dataKey(key, at), v, nil); err != nil && d.err == nil {
		d.err = err
	}
}

// drop implements sink.
func (d *Durable) drop(key string, at int64) {
	if err := d.b.Delete(d.dataKey(key, at), nil); err != nil && d.err == nil {
		d.err = err
	}
}

// Apply is Table.Apply of a row whose encoding is raw (nil with row nil:
// a tombstone): kept in memory at once, on disk with the next Commit.
func (d *Durable) Apply(key string, at int64, row Row, raw []byte) bool {
	return d.apply(key, at, row, raw)
}

// Checkpoint is the position the stored table reflects, as the caller
// gave it to Commit; nil when there is none (a new or wiped store).
func (d *Durable) Checkpoint() []byte { return d.ckpt }

// Commit writes every version applied since the last Commit, with the
// checkpoint, in one batch. It does not sync: a crash of the machine may
// lose the last batches, never part of one, so the store still holds
// the table at an earlier checkpoint.
func (d *Durable) Commit(checkpoint []byte) error {
	if d.err != nil {
		return fmt.Errorf("table store: %w", d.err)
	}
	d.Table.mu.RLock()
	mt := d.Table.maxTime
	d.Table.mu.RUnlock()
	b := d.b
	err := errors.Join(b.Set(metaFingerprint, d.fp, nil), b.Set(metaCheckpoint, checkpoint, nil),
		b.Set(metaMaxTime, binary.BigEndian.AppendUint64(nil, uint64(mt)), nil))
	if err == nil {
		err = d.db.Apply(b, pebble.NoSync)
	}
	if err != nil {
		return fmt.Errorf("table store: commit: %w", err)
	}
	d.ckpt = bytes.Clone(checkpoint)
	d.b = d.db.NewBatch()
	return nil
}

// Wipe empties the table, in memory and on disk, and drops the
// checkpoint: the caller then loads the topic from its start.
func (d *Durable) Wipe() error {
	t := d.Table
	t.mu.Lock()
	t.cur, t.keys, t.entries, t.bytes, t.names = newIndex(), map[string][]version{}, 0, 0, names{}
	t.maxTime, t.swept = math.MinInt64, math.MinInt64
	t.mu.Unlock()
	d.ckpt, d.err = nil, nil
	_ = d.b.Close()
	err := d.db.DeleteRange([]byte{0}, []byte{0xff}, pebble.Sync)
	if err == nil {
		err = d.db.Set(metaFingerprint, d.fp, pebble.Sync)
	}
	d.b = d.db.NewBatch()
	if err != nil {
		return fmt.Errorf("table store: wipe: %w", err)
	}
	return nil
}

// Close closes the store; what was applied since the last Commit is
// not kept (the checkpoint does not cover it).
func (d *Durable) Close() error {
	_ = d.b.Close()
	err := d.db.LogData(nil, pebble.Sync)
	return errors.Join(err, d.db.Close())
}

// quietLogger drops Pebble's informational lines and sends its errors
// to slog. Fatalf is Pebble's unrecoverable corruption: it must not
// return (remove the table's directory under state.dir: the next start
// loads the table from its topic).
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	slog.Error("lookup table store (pebble)", "error", fmt.Sprintf(format, args...))
}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
