package window

import (
	"encoding/binary"
	"slices"
)

// Deferred writes: an in-order record moves its source's progress and
// the watermark, and writing both to the store on every record copies
// two values the store must keep unchanged (Store's contract) only for
// the next record to replace them. Between BeginBatch and Flush the
// operator keeps them in memory (it never reads either back from the
// store after New) and writes each changed one once, at Flush, with its
// final value. A store's changes report only a key's last value per
// commit, so the changelog records of a commit are the same as with a
// write per record, provided the caller flushes before anything else
// reads the store (its changes, a checkpoint, a size, a state query).

// BeginBatch defers the writes of the watermark (meta) and of every
// source's progress until Flush. Every other write goes to the store at
// once. Until Flush, the store lags the operator on those keys: the
// caller must let nothing else read the store before it flushes.
func (o *Operator) BeginBatch() { o.batch = true }

// Flush writes what BeginBatch deferred (the watermark and each source
// whose progress moved, one Set each) and ends the deferral. After an
// error the store may hold part of them: the caller aborts and rebuilds
// the operator from the changelog, as after any store error.
func (o *Operator) Flush() error {
	o.batch = false
	meta := o.metaDirty
	o.metaDirty = false
	srcs := o.dirtySrcs[:0]
	for s := range o.dirty {
		srcs = append(srcs, s)
	}
	clear(o.dirty)
	slices.Sort(srcs) // one write order, whatever the map's
	defer func() { clear(srcs); o.dirtySrcs = srcs[:0] }()
	for _, s := range srcs {
		if err := o.putSource(s, o.srcs[s]); err != nil {
			return err
		}
	}
	if meta {
		return o.putMeta()
	}
	return nil
}

// DropBatch ends the deferral without writing what it deferred: after a
// store error, when the caller rebuilds the operator from the changelog
// and must not touch the failed store again.
func (o *Operator) DropBatch() {
	o.batch, o.metaDirty = false, false
	clear(o.dirty)
}

// writeMeta stores the watermark, or defers it (BeginBatch).
func (o *Operator) writeMeta() error {
	if o.batch {
		o.metaDirty = true
		return nil
	}
	return o.putMeta()
}

func (o *Operator) putMeta() error {
	o.vbuf = appendMeta(o.vbuf[:0], meta{watermark: o.wm, fingerprint: o.p.fingerprint, described: o.p.described})
	return o.st.Set(metaKey, o.vbuf)
}

// writeSource stores src's progress m, or defers it (BeginBatch).
func (o *Operator) writeSource(src string, m int64) error {
	if o.batch {
		if !o.dirty[src] {
			if o.dirty == nil {
				o.dirty = map[string]bool{}
			}
			o.dirty[src] = true
		}
		return nil
	}
	return o.putSource(src, m)
}

func (o *Operator) putSource(src string, m int64) error {
	o.kbuf = appendSourceKey(o.kbuf[:0], src)
	o.vbuf = binary.AppendVarint(o.vbuf[:0], m)
	return o.st.Set(o.kbuf, o.vbuf)
}
