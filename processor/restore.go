package processor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/changelog"
	"github.com/sidestream/sidestream/kclient"
	"github.com/sidestream/sidestream/processor/stateful"
	"github.com/sidestream/sidestream/topology"
	"github.com/sidestream/sidestream/wire"
)

// restore reads one changelog partition into st, read_committed, up to
// its end, and returns how many records it read and the offset it
// started from. It first waits until no transaction is open on the
// partition (the last stable offset reaches the high watermark), so the
// state matches the input offsets this process resumes from.
//
// A store with a local checkpoint restores only from there. A store
// without one (never committed, a crash before its first checkpoint), or
// with one older than the changelog's delete.retention.ms, is wiped and
// the whole partition is read. A checkpoint outside the partition's
// [log start, end] is a changelog loss (see restoreState).
func (p *Processor) restore(ctx context.Context, route, topic string, part int32, st changelog.Store) (n int, from int64, err error) {
	r, err := p.restoreState(ctx, route, topic, part, st)
	return r.n, r.from, err
}

// restoreResult is what restoreState did: records read, the offset it read
// from, and accept, the log start offset of a loss that
// state.on_changelog_loss: start_empty accepted (stateful.NoMark: none), which the
// task records in its changelog with its next commit.
type restoreResult struct {
	n      int
	from   int64
	accept int64
}

// restoreState is restore, with the changelog-loss checks: the changelog
// does not hold the state it must when
//   - records were deleted from it (log start > 0: a compacted changelog
//     never moves its log start, only DeleteRecords or retention do), and
//     no earlier start_empty run accepted that log start;
//   - it is empty or missing while something witnesses that it held
//     state (stateWitness: the group's committed offset on the same
//     repartition partition, or for a route without a repartition topic,
//     the metadata of the committed input offsets);
//   - a local checkpoint lies past its end (recreated or truncated) or
//     below its log start (records deleted).
//
// Each is a *ChangelogLossError unless state.on_changelog_loss is
// start_empty; then the task starts with what the changelog still holds.
//
// It ends when ctx does (shutdown, a state query's client gone), at the
// latest a minute past the transaction timeout (an open transaction no
// one ends).
func (p *Processor) restoreState(ctx context.Context, route, topic string, part int32, st changelog.Store) (res restoreResult, err error) {
	res.accept = stateful.NoMark
	ctx, cancel := context.WithTimeout(ctx, p.opts.txnTimeout+time.Minute)
	defer cancel()
	began := time.Now() // the state read reflects the changelog as of now
	var end, logStart int64
	for {
		// Right after the topic is created its metadata may still be
		// spreading: listing errors are retried until the deadline.
		hwm, err := listOffset(ctx, p.adm.ListEndOffsets, topic, part)
		var lso int64
		if err == nil {
			lso, err = listOffset(ctx, p.adm.ListCommittedOffsets, topic, part)
		}
		if err == nil {
			logStart, err = listOffset(ctx, p.adm.ListStartOffsets, topic, part)
		}
		if err == nil && lso == hwm {
			end = hwm
			break
		}
		if err != nil {
			if lerr := p.missingChangelog(ctx, route, topic, part, err); lerr != nil {
				return res, lerr
			}
		}
		if err == nil {
			err = fmt.Errorf("a transaction is open (stable offset %d, end %d)", lso, hwm)
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("restore %s[%d]: %v: %w", topic, part, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	full := true // the whole partition is read: its start must be the changelog's start
	ck, _ := st.(changelog.Checkpointer)
	if ck != nil {
		off, ok := ck.Checkpoint()
		var why, reason, loss string
		switch {
		case !ok:
			why, reason = "no local checkpoint", "no_checkpoint"
		case off < logStart:
			why, reason, loss = fmt.Sprintf("local checkpoint %d is below the changelog's log start offset %d (records deleted)", off, logStart), "below_start", wire.LossCheckpointBelowStart
		case off > end:
			why, reason, loss = fmt.Sprintf("local checkpoint %d is past the changelog's end offset %d (topic recreated or truncated)", off, end), "past_end", wire.LossCheckpointPastEnd
		default:
			// A tombstone written after the checkpoint may have been
			// compacted away once delete.retention.ms passed: the tail
			// would then miss a delete and leave a purged window behind.
			if ret := p.deleteRetention(ctx, topic); began.Sub(ck.CheckpointTime()) >= ret {
				why, reason = fmt.Sprintf("checkpoint from %s is older than the changelog's delete.retention.ms (%s)",
					ck.CheckpointTime().UTC().Format(time.RFC3339), ret), "older_than_delete_retention"
			} else {
				res.from, full = off, false
			}
		}
		if loss != "" {
			// Checked before the wipe: under fail the local state stays
			// as it was.
			if err := p.changelogLoss(route, topic, part, loss, why); err != nil {
				return res, err
			}
			res.accept, full = logStart, false
		}
		if why != "" {
			if ok || st.Len() > 0 { // not a first start: state was there
				p.log.Warn("local state not usable; wiping it and restoring the whole changelog",
					"route", route, "partition", part, "reason", why)
				p.m.StateWipes.WithLabelValues(route, reason).Inc()
			}
			if err := ck.Wipe(); err != nil {
				return res, fmt.Errorf("restore %s[%d]: wipe local state: %w", topic, part, err)
			}
			res.from = 0
		}
	}
	if full && end == 0 {
		w, err := p.stateWitness(ctx, topic, part)
		if err != nil {
			return res, fmt.Errorf("restore %s[%d]: %w", topic, part, err)
		}
		if w != "" {
			if err := p.changelogLoss(route, topic, part, wire.LossChangelogEmpty, "the partition is empty (log start 0, end 0), but "+w); err != nil {
				return res, err
			}
			res.accept = 0
		}
		if rep := p.repartitionOf(topic); p.isDirect(rep) {
			p.src.release(rep, part) // empty, by choice or from the start
		}
		return res, nil
	}
	if rep := p.repartitionOf(topic); end > 0 && p.isDirect(rep) {
		p.src.hold(rep, part, route)
	}
	res.from = max(res.from, logStart)
	// With records deleted, whether the loss was accepted before is known
	// only once the partition is read (the mark is one of its keys), so
	// the read is not checkpointed until then.
	suspect := full && logStart > 0
	mark := stateful.NoMark
	deleted := func() error {
		if !suspect || mark >= logStart {
			return nil
		}
		err := p.changelogLoss(route, topic, part, wire.LossRecordsDeleted,
			fmt.Sprintf("records before offset %d were deleted (log start offset %d, end offset %d)", logStart, logStart, end))
		if err == nil {
			res.accept = logStart
		}
		return err
	}
	if res.from >= end {
		return res, deleted()
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(p.top.Config.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(res.from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	}, append(kclient.BufferOpts(topology.Client{FetchMaxBytes: p.top.Config.Client.FetchMaxBytes,
		FetchMaxPartitionBytes: p.top.Config.Client.FetchMaxPartitionBytes}), p.opts.kgoOpts...)...)...)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	const checkpointEvery = 50_000 // bounds a long restore's pending batch
	sinceCk := 0
	for next := res.from; next < end; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("restore %s[%d]: read to offset %d of %d: %w", topic, part, next, end, err)
		}
		for _, fe := range fs.Errors() {
			return res, fmt.Errorf("restore %s[%d] at offset %d: %w", topic, part, next, fe.Err)
		}
		var rerr error
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if r.Attrs.IsControl() || rerr != nil {
				return
			}
			if v, ok := stateful.LossMark(r.Key, r.Value); ok {
				mark = v
			}
			if err := st.Restore(r.Key, r.Value); err != nil {
				rerr = err
			}
			res.n++
			sinceCk++
		})
		if rerr != nil {
			return res, fmt.Errorf("restore %s[%d]: %w", topic, part, rerr)
		}
		if next >= end {
			if err := deleted(); err != nil {
				return res, err
			}
		}
		if ck != nil && ((!suspect && sinceCk >= checkpointEvery) || next >= end) {
			if err := ck.Commit(next, began); err != nil {
				return res, fmt.Errorf("restore %s[%d]: checkpoint at %d: %w", topic, part, next, err)
			}
			sinceCk = 0
		}
	}
	return res, nil
}

// deleteRetention is the changelog's delete.retention.ms: how long the
// cleaner keeps tombstones. Kafka's default (one day) when it cannot be
// read.
func (p *Processor) deleteRetention(ctx context.Context, topic string) time.Duration {
	const kafkaDefault = 24 * time.Hour
	rcs, err := p.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		p.log.Debug("cannot read delete.retention.ms; assuming Kafka's default", "topic", topic, "err", err)
		return kafkaDefault
	}
	for _, c := range rcs[0].Configs {
		if c.Key == "delete.retention.ms" && c.Value != nil {
			if ms, err := strconv.ParseInt(*c.Value, 10, 64); err == nil && ms >= 0 {
				return time.Duration(ms) * time.Millisecond
			}
		}
	}
	return kafkaDefault
}

func listOffset(ctx context.Context, fn func(context.Context, ...string) (kadm.ListedOffsets, error), topic string, part int32) (int64, error) {
	lo, err := fn(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	o, ok := lo.Lookup(topic, part)
	if !ok {
		return 0, fmt.Errorf("list offsets of %s: partition %d missing", topic, part)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("list offsets of %s[%d]: %w", topic, part, o.Err)
	}
	return o.Offset, nil
}
