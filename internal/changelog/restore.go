package changelog

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Source is one changelog partition to rebuild a store from, and how to
// reach it.
type Source struct {
	// Admin lists the partition's offsets and reads the topic's
	// delete.retention.ms.
	Admin *kadm.Client
	// ClientOpts build the client that reads the partition (seed brokers,
	// security, buffers); Restore adds what to consume, read_committed.
	ClientOpts []kgo.Opt
	Topic      string
	Partition  int32
	// Began is the time the rebuilt state reflects the changelog as of
	// (the caller's clock: this package reads none). A checkpoint older
	// than delete.retention.ms before it is not used, and the checkpoint
	// Restore writes carries it.
	Began time.Time
	// MarkKey is a key whose last value a full read reports with
	// RecordsDeleted (the caller's record of a loss it accepted before).
	MarkKey []byte
	// OnFinding is told each finding as it is made. For a loss (see
	// FindingKind) its error stops the restore and nil lets it go on with
	// what the changelog still holds; that decision is the caller's
	// policy, never this package's.
	OnFinding func(context.Context, Finding) error
	// Log receives debug lines (nil: none).
	Log *slog.Logger
}

// FindingKind names what Restore found.
type FindingKind int

const (
	// ListFailed: listing the partition's offsets failed (Err), e.g. the
	// topic does not exist (yet). nil from OnFinding: retry until ctx ends.
	ListFailed FindingKind = iota
	// CheckpointBelowStart: the local checkpoint lies below the log start
	// offset (records deleted). A loss, told before the local state is
	// wiped.
	CheckpointBelowStart
	// CheckpointPastEnd: the local checkpoint lies past the end offset
	// (topic recreated or truncated). A loss, told before the wipe.
	CheckpointPastEnd
	// Wipe: the local state is not usable (Reason, Detail) and is wiped;
	// the whole partition is read. HadState says it held state (not a
	// first start). OnFinding's error is ignored.
	Wipe
	// Empty: a full read found the partition empty (log start 0, end 0).
	// A loss if something the caller knows says it held state.
	Empty
	// RecordsDeleted: a full read of a partition whose log start offset
	// is above 0 (a compacted changelog never moves it: records were
	// deleted). Told once the partition is read, before its checkpoint,
	// with the last value of Source.MarkKey. A loss unless Mark says the
	// caller accepted it.
	RecordsDeleted
)

// Finding is one fact Restore reports to Source.OnFinding.
type Finding struct {
	Kind FindingKind
	// Err is the listing's error (ListFailed).
	Err error
	// Reason is a bounded name of why local state is wiped (Wipe):
	// no_checkpoint, below_start, past_end, older_than_delete_retention.
	Reason string
	// Detail says what was found, with its offsets.
	Detail string
	// HadState: the store held state before the wipe (Wipe).
	HadState bool
	// LogStart and End are the partition's log start and stable end.
	LogStart, End int64
	// Mark is the last value of Source.MarkKey read, MarkSeen whether
	// there was one (RecordsDeleted).
	Mark     []byte
	MarkSeen bool
}

// Facts is what Restore did.
type Facts struct {
	// Records is how many records were applied to the store.
	Records int
	// From is the offset the read started at; End the stable end it read
	// to; LogStart the partition's log start offset.
	From, End, LogStart int64
	// Read says the partition passed every check and its read began.
	Read bool
	// Full says the whole partition was to be read (no usable
	// checkpoint, no accepted checkpoint loss).
	Full bool
}

// Restore rebuilds st from one changelog partition, read_committed, up
// to its end. It first waits until no transaction is open on the
// partition (the last stable offset reaches the high watermark), so the
// state matches the input offsets the caller resumes from.
//
// A store with a local checkpoint (a Checkpointer) restores only from
// there. A store without one (never committed, a crash before its first
// checkpoint), or with one older than the changelog's
// delete.retention.ms, is wiped and the whole partition is read. What
// may be a loss is told to OnFinding, which decides. It ends when ctx
// does. The facts are returned with any error.
func Restore(ctx context.Context, src Source, st Store) (Facts, error) {
	var f Facts
	var err error
	if f.LogStart, f.End, err = stableBounds(ctx, src); err != nil {
		return f, err
	}
	ck, _ := st.(Checkpointer)
	if f.From, f.Full, err = plan(ctx, src, ck, st, f.LogStart, f.End); err != nil {
		return f, err
	}
	if f.Full && f.End == 0 {
		return f, src.OnFinding(ctx, Finding{Kind: Empty, LogStart: f.LogStart, End: f.End,
			Detail: "the partition is empty (log start 0, end 0)"})
	}
	f.Read = true
	f.From = max(f.From, f.LogStart)
	f.Records, err = read(ctx, src, st, ck, f)
	return f, err
}

// stableBounds waits until no transaction is open on the partition and
// returns its log start and end offsets.
func stableBounds(ctx context.Context, src Source) (logStart, end int64, err error) {
	topic, part := src.Topic, src.Partition
	for {
		// Right after the topic is created its metadata may still be
		// spreading: listing errors are retried until ctx ends.
		hwm, err := listOffset(ctx, src.Admin.ListEndOffsets, topic, part)
		var lso int64
		if err == nil {
			lso, err = listOffset(ctx, src.Admin.ListCommittedOffsets, topic, part)
		}
		if err == nil {
			logStart, err = listOffset(ctx, src.Admin.ListStartOffsets, topic, part)
		}
		if err == nil && lso == hwm {
			return logStart, hwm, nil
		}
		if err != nil {
			if ferr := src.OnFinding(ctx, Finding{Kind: ListFailed, Err: err}); ferr != nil {
				return 0, 0, ferr
			}
		}
		if err == nil {
			err = fmt.Errorf("a transaction is open (stable offset %d, end %d)", lso, hwm)
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("restore %s[%d]: %v: %w", topic, part, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// plan decides where the read starts from the store's checkpoint, and
// wipes local state that is not usable. full says the whole partition is
// read with nothing accepted in advance.
func plan(ctx context.Context, src Source, ck Checkpointer, st Store, logStart, end int64) (from int64, full bool, err error) {
	if ck == nil {
		return 0, true, nil
	}
	off, ok := ck.Checkpoint()
	var why, reason string
	loss := FindingKind(-1)
	switch {
	case !ok:
		why, reason = "no local checkpoint", "no_checkpoint"
	case off < logStart:
		why, reason, loss = fmt.Sprintf("local checkpoint %d is below the changelog's log start offset %d (records deleted)", off, logStart), "below_start", CheckpointBelowStart
	case off > end:
		why, reason, loss = fmt.Sprintf("local checkpoint %d is past the changelog's end offset %d (topic recreated or truncated)", off, end), "past_end", CheckpointPastEnd
	default:
		// A tombstone written after the checkpoint may have been
		// compacted away once delete.retention.ms passed: the tail
		// would then miss a delete and leave a purged window behind.
		ret := deleteRetention(ctx, src)
		if src.Began.Sub(ck.CheckpointTime()) < ret {
			return off, false, nil
		}
		why, reason = fmt.Sprintf("checkpoint from %s is older than the changelog's delete.retention.ms (%s)",
			ck.CheckpointTime().UTC().Format(time.RFC3339), ret), "older_than_delete_retention"
	}
	full = true
	if loss >= 0 {
		// Told before the wipe: a caller that stops leaves the local
		// state as it was.
		if err := src.OnFinding(ctx, Finding{Kind: loss, Detail: why, LogStart: logStart, End: end}); err != nil {
			return 0, false, err
		}
		full = false
	}
	_ = src.OnFinding(ctx, Finding{Kind: Wipe, Reason: reason, Detail: why, HadState: ok || st.Len() > 0, LogStart: logStart, End: end})
	if err := ck.Wipe(); err != nil {
		return 0, false, fmt.Errorf("restore %s[%d]: wipe local state: %w", src.Topic, src.Partition, err)
	}
	return 0, full, nil
}

// read applies [f.From, f.End) to st and checkpoints it. With records
// deleted (a full read, log start above 0), whether the caller accepted
// the loss before is known only once the partition is read (its mark is
// one of the keys), so the read is not checkpointed until then.
func read(ctx context.Context, src Source, st Store, ck Checkpointer, f Facts) (n int, err error) {
	topic, part, end := src.Topic, src.Partition, f.End
	suspect := f.Full && f.LogStart > 0
	var mark []byte
	markSeen := false
	deleted := func() error {
		if !suspect {
			return nil
		}
		return src.OnFinding(ctx, Finding{Kind: RecordsDeleted, LogStart: f.LogStart, End: end, Mark: mark, MarkSeen: markSeen,
			Detail: fmt.Sprintf("records before offset %d were deleted (log start offset %d, end offset %d)", f.LogStart, f.LogStart, end)})
	}
	if f.From >= end {
		return 0, deleted()
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {part: kgo.NewOffset().At(f.From)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	}, src.ClientOpts...)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	const checkpointEvery = 50_000 // bounds a long restore's pending batch
	sinceCk := 0
	for next := f.From; next < end; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("restore %s[%d]: read to offset %d of %d: %w", topic, part, next, end, err)
		}
		for _, fe := range fs.Errors() {
			return n, fmt.Errorf("restore %s[%d] at offset %d: %w", topic, part, next, fe.Err)
		}
		var rerr error
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if r.Attrs.IsControl() || rerr != nil {
				return
			}
			if src.MarkKey != nil && bytes.Equal(r.Key, src.MarkKey) {
				mark, markSeen = r.Value, true
			}
			if err := st.Restore(r.Key, r.Value); err != nil {
				rerr = err
			}
			n++
			sinceCk++
		})
		if rerr != nil {
			return n, fmt.Errorf("restore %s[%d]: %w", topic, part, rerr)
		}
		if next >= end {
			if err := deleted(); err != nil {
				return n, err
			}
		}
		if ck != nil && ((!suspect && sinceCk >= checkpointEvery) || next >= end) {
			if err := ck.Commit(next, src.Began); err != nil {
				return n, fmt.Errorf("restore %s[%d]: checkpoint at %d: %w", topic, part, next, err)
			}
			sinceCk = 0
		}
	}
	return n, nil
}

// deleteRetention is the changelog's delete.retention.ms: how long the
// cleaner keeps tombstones. Kafka's default (one day) when it cannot be
// read.
func deleteRetention(ctx context.Context, src Source) time.Duration {
	const kafkaDefault = 24 * time.Hour
	rcs, err := src.Admin.DescribeTopicConfigs(ctx, src.Topic)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		if src.Log != nil {
			src.Log.Debug("cannot read delete.retention.ms; assuming Kafka's default", "topic", src.Topic, "err", err)
		}
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
