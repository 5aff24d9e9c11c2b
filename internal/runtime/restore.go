package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/sidestream/sidestream/internal/plan"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/stagetwo"
	"github.com/sidestream/sidestream/internal/wire"
)

// restore reads one changelog partition into st (restoreState) and
// returns how many records it read and the offset it started from.
func (p *Processor) restore(ctx context.Context, route, topic string, part int32, st changelog.Store) (n int, from int64, err error) {
	r, err := p.restoreState(ctx, route, topic, part, st)
	return r.n, r.from, err
}

// restoreResult is what restoreState did: records read, the offset it read
// from, and accept, the log start offset of a loss that
// state.on_changelog_loss: start_empty accepted (stagetwo.NoMark: none), which the
// task records in its changelog with its next commit.
type restoreResult struct {
	n      int
	from   int64
	accept int64
}

// restoreClientOpts are the options of a restore's consumer: the
// client section's fetch bounds and metadata age (it produces nothing),
// then the security options.
func (p *Processor) restoreClientOpts() []kgo.Opt {
	c := p.top.Settings.Client
	return append(append([]kgo.Opt{kgo.SeedBrokers(p.top.Settings.Brokers...)},
		kclient.Opts(plan.Client{FetchMaxBytes: c.FetchMaxBytes, FetchMaxPartitionBytes: c.FetchMaxPartitionBytes,
			MetadataMinAge: c.MetadataMinAge})...), p.opts.kgoOpts...)
}

// restoreState rebuilds st with changelog.Restore, which reports what it
// finds, and applies the changelog-loss policy to it: the changelog does
// not hold the state it must when
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
func (p *Processor) restoreState(ctx context.Context, route, topic string, part int32, st changelog.Store) (restoreResult, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.txnTimeout+time.Minute)
	defer cancel()
	res := restoreResult{accept: stagetwo.NoMark}
	f, err := changelog.Restore(ctx, changelog.Source{
		Admin:      p.adm,
		ClientOpts: p.restoreClientOpts(),
		Topic:      topic,
		Partition:  part,
		Began:      time.Now(), // the state read reflects the changelog as of now
		MarkKey:    stagetwo.LossMarkKey,
		Log:        p.log,
		OnFinding: func(ctx context.Context, fd changelog.Finding) error {
			return p.restoreFinding(ctx, route, topic, part, fd, &res)
		},
	}, st)
	res.n, res.from = f.Records, f.From
	rep := p.stage.RepartitionOf(topic)
	switch {
	case f.Read && f.End > 0 && p.stage.IsDirect(rep):
		p.src.hold(rep, part, route)
	case err == nil && f.Full && f.End == 0 && p.stage.IsDirect(rep):
		p.src.release(rep, part) // empty, by choice or from the start
	}
	return res, err
}

// restoreFinding is the policy for one finding of changelog.Restore: a
// loss stops the task or is accepted (res.accept), a wipe is logged and
// counted.
func (p *Processor) restoreFinding(ctx context.Context, route, topic string, part int32, fd changelog.Finding, res *restoreResult) error {
	var err error
	switch fd.Kind {
	case changelog.ListFailed:
		return p.stage.MissingChangelog(ctx, route, topic, part, fd.Err)
	case changelog.CheckpointBelowStart, changelog.CheckpointPastEnd:
		loss := wire.LossCheckpointBelowStart
		if fd.Kind == changelog.CheckpointPastEnd {
			loss = wire.LossCheckpointPastEnd
		}
		if err = p.stage.ChangelogLoss(route, topic, part, loss, fd.Detail); err == nil {
			res.accept = fd.LogStart
		}
	case changelog.Wipe:
		if fd.HadState { // not a first start: state was there
			p.log.Warn("local state not usable; wiping it and restoring the whole changelog",
				"route", route, "partition", part, "reason", fd.Detail)
			p.m.StateWipes.WithLabelValues(route, fd.Reason).Inc()
		}
	case changelog.Empty:
		w, werr := p.stage.StateWitness(ctx, topic, part)
		if werr != nil {
			return fmt.Errorf("restore %s[%d]: %w", topic, part, werr)
		}
		if w == "" {
			return nil
		}
		if err = p.stage.ChangelogLoss(route, topic, part, wire.LossChangelogEmpty, fd.Detail+", but "+w); err == nil {
			res.accept = 0
		}
	case changelog.RecordsDeleted:
		mark := stagetwo.NoMark
		if fd.MarkSeen {
			mark, _ = stagetwo.LossMark(stagetwo.LossMarkKey, fd.Mark)
		}
		if mark >= fd.LogStart {
			return nil // accepted by an earlier start_empty run
		}
		if err = p.stage.ChangelogLoss(route, topic, part, wire.LossRecordsDeleted, fd.Detail); err == nil {
			res.accept = fd.LogStart
		}
	}
	return err
}
