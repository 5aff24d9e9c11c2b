package processor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/kclient"
	"github.com/sidestream/sidestream/metrics"
)

// runExactlyOnce is one group session under exactly-once: every output of
// one commit interval and the input offsets are one Kafka transaction.
// A rebalance aborts the open transaction (the session rewinds to the last
// committed offsets and the records are processed again), so a
// read_committed reader sees each input's effect once.
func (p *Processor) runExactlyOnce(ctx context.Context) error {
	cfg := p.top.Config
	o := append(p.clientOpts(),
		kgo.TransactionalID(p.TransactionalID()),
		kgo.TransactionTimeout(p.opts.txnTimeout),
		kgo.OnPartitionsRevoked(p.onRevoked("revoked")),
		kgo.OnPartitionsLost(p.onRevoked("lost")),
	)
	sess, err := kgo.NewGroupTransactSession(o...)
	if err != nil {
		return fmt.Errorf("transactional client: %w", err)
	}
	defer sess.Close() // leaves the group
	// End must never see a cancelled context: cancelling it mid-commit
	// can report failure for a commit that happened (franz-go #1052).
	endCtx := context.WithoutCancel(ctx)
	var perr produceErr
	produce := func(r *kgo.Record) {
		sess.Produce(endCtx, r, func(r *kgo.Record, err error) {
			if err != nil {
				perr.set(&kclient.TopicError{Topic: r.Topic, Err: err})
			}
		})
	}
	produceChangelog := func(r *kgo.Record) {
		sess.Produce(endCtx, r, func(r *kgo.Record, err error) {
			if err != nil {
				perr.set(&kclient.TopicError{Topic: r.Topic, Err: err})
				return
			}
			p.produced(r)
		})
	}
	interval := cfg.CommitInterval.D()
	// abort ends the session's open transaction after a batch failed (a
	// store error, a restore that could not finish): nothing of it may
	// commit, not even the side records sampled for the web view.
	abort := func(err error) error {
		_, _ = sess.End(endCtx, kgo.TryAbort)
		p.samples.discard()
		return err
	}
	watch := newStrandedWatch(5*time.Second, strandedAfter(p.opts.txnTimeout),
		func(ctx context.Context, parts map[string][]int32) (map[string][]int32, error) {
			return unstablePartitions(ctx, p.admCl, cfg.ApplicationID, parts)
		})
	for {
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin transaction: %w", err)
		}
		txnStart := time.Now()
		pending := metrics.NewTally()
		perr.reset()
		for {
			pollCtx, cancel := context.WithDeadline(ctx, txnStart.Add(interval))
			fetches := sess.PollRecords(pollCtx, p.opts.maxPoll)
			cancel()
			p.st.loop()
			if err := p.pollErrors(fetches); err != nil {
				return err
			}
			tally, err := p.processFetches(ctx, fetches, produce)
			if err != nil {
				return abort(err)
			}
			pending.Add(tally)
			if err := p.idleAdvance(time.Now(), produce, pending); err != nil {
				return abort(err)
			}
			if err := p.assemblyTick(time.Now(), p.samples.wrap(produce), pending); err != nil {
				return abort(err)
			}
			if ctx.Err() != nil || time.Since(txnStart) >= interval || pending.Records() >= cfg.CommitRecords || perr.get() != nil {
				break
			}
		}
		for _, r := range p.marks(pending) {
			produce(r)
		}
		for _, r := range p.changelogRecords(pending) {
			produceChangelog(r)
		}
		if err := p.endTxn(endCtx, sess, pending, &perr); err != nil {
			return err
		}
		if ctx.Err() != nil {
			p.log.Info("stopping: transaction ended, leaving the group")
			return nil
		}
		if now := time.Now(); p.st.isJoined() {
			if err := watch.check(ctx, now, p.st.quiet(now, watch.every)); err != nil {
				return err
			}
		}
	}
}

// endTxn commits (or aborts after a produce failure) and accounts for it.
func (p *Processor) endTxn(ctx context.Context, sess *kgo.GroupTransactSession, pending *metrics.Tally, perr *produceErr) error {
	start := time.Now()
	want := kgo.TryCommit
	// Every promise has run once Flush returns: a record that failed
	// before reaching a broker (an output topic deleted, its metadata
	// never loaded) fails only its own promise, not the transaction,
	// so deciding before the flush would commit the offsets without
	// the record.
	if err := sess.Client().Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	prodErr := perr.get()
	if prodErr != nil {
		want = kgo.TryAbort
	}
	// Each input partition's offset carries its source progress, in the
	// same transaction (sources.go).
	committed, err := sess.End(kgo.PreTxnCommitFnContext(ctx, p.src.txnCommitMeta), want)
	p.m.CommitDuration.Observe(time.Since(start).Seconds())
	switch {
	case err != nil:
		p.samples.discard()
		p.m.Aborts.WithLabelValues(AbortCommitError).Inc()
		return fmt.Errorf("end transaction: %w", err)
	case prodErr != nil:
		p.samples.discard()
		p.dropState(nil)
		p.gaps.rewind(sess.Client().CommittedOffsets())
		if topic, ok := kclient.AuthzRefused(prodErr); ok {
			p.m.Aborts.WithLabelValues(AbortAuthorization).Inc()
			p.m.AuthzRefused.WithLabelValues(topic).Inc()
			why := fmt.Sprintf("transaction aborted: writes to topic %s refused by the broker's authorizer (%v); "+
				"grant this principal WRITE on the topic (an ACL); the batch is tried again, backing off up to %s", topic, prodErr, maxProduceBackoff)
			p.st.ready.set(false, why)
			p.log.Error("writes refused by an ACL; transaction aborted, the batch will be tried again", "topic", topic, "err", prodErr)
		} else {
			p.m.Aborts.WithLabelValues(AbortProduceError).Inc()
			p.st.ready.set(false, "transaction aborted: produce failed: "+prodErr.Error())
			p.log.Error("produce failed; transaction aborted, the batch will be processed again", "err", prodErr)
		}
		if kclient.Classify(kclient.Produce, prodErr) == kclient.Fatal {
			return fmt.Errorf("produce: %w", prodErr)
		}
		// Give a persistent failure (deleted topic, refused ACL) room
		// instead of spinning: each retry processes the batch again.
		p.produceFails++
		time.Sleep(min(time.Second<<min(p.produceFails-1, 4), maxProduceBackoff))
		return nil
	case !committed:
		p.samples.discard()
		p.gaps.rewind(sess.Client().CommittedOffsets())
		// The state in memory holds this transaction's changes: drop it,
		// the next records restore what the changelog committed.
		p.dropState(nil)
		if pending.Records() > 0 {
			p.m.Aborts.WithLabelValues(AbortRebalance).Inc()
			p.log.Info("transaction aborted by a rebalance; the batch will be processed again", "records", pending.Records())
		}
		return nil
	}
	p.samples.committed()
	p.produceFails = 0
	if !pending.Empty() { // an empty transaction sends nothing: not a commit
		p.m.Observe(pending)
		p.committedGaps(pending)
		p.m.Commits.Inc()
		p.st.committed(committedOffsets(sess.Client()), time.Now())
	}
	p.checkpoint()
	p.markReady(sess.Client())
	return nil
}

// maxProduceBackoff bounds the wait before a batch whose produce failed
// is tried again (1 s, doubling while the failures go on).
const maxProduceBackoff = 8 * time.Second

// runAtLeastOnce is one group session under at-least-once: outputs go
// through an idempotent producer and input offsets are committed only
// after every output of the interval is acknowledged.
func (p *Processor) runAtLeastOnce(ctx context.Context) error {
	cfg := p.top.Config
	var (
		cl      *kgo.Client
		perr    produceErr
		pending = metrics.NewTally()
		mu      sync.Mutex
	)
	flushCtx := context.WithoutCancel(ctx)
	var produce, produceChangelog func(*kgo.Record)
	// commit flushes and commits what was polled; it runs from the loop
	// and from the revoke callback, never both at once.
	commit := func() error {
		start := time.Now()
		for _, r := range p.marks(pending) {
			produce(r)
		}
		for _, r := range p.changelogRecords(pending) {
			produceChangelog(r)
		}
		if err := cl.Flush(flushCtx); err != nil {
			return fmt.Errorf("flush: %w", err)
		}
		if err := perr.get(); err != nil {
			if topic, ok := kclient.AuthzRefused(err); ok {
				// Nothing is committed; the session is rebuilt with backoff.
				p.m.AuthzRefused.WithLabelValues(topic).Inc()
			}
			return fmt.Errorf("produce: %w", err)
		}
		if err := cl.CommitUncommittedOffsets(kgo.PreCommitFnContext(flushCtx, p.src.commitMeta)); err != nil {
			p.samples.discard()
			return fmt.Errorf("commit offsets: %w", err)
		}
		p.samples.committed()
		p.checkpoint()
		if pending.Empty() {
			return nil
		}
		p.m.CommitDuration.Observe(time.Since(start).Seconds())
		p.m.Observe(pending)
		p.committedGaps(pending)
		p.m.Commits.Inc()
		*pending = *metrics.NewTally()
		p.st.committed(committedOffsets(cl), time.Now())
		return nil
	}
	var revokeErr error
	// failed is set when a batch failed (a store error, a restore that
	// could not finish): the session ends and leaving the group runs the
	// revoke callback, which must then commit nothing of it.
	failed := false
	revoked := func(kind string) func(context.Context, *kgo.Client, map[string][]int32) {
		inner := p.onRevoked(kind)
		return func(c context.Context, k *kgo.Client, r map[string][]int32) {
			mu.Lock()
			if kind == "revoked" && !failed {
				if err := commit(); err != nil && revokeErr == nil {
					revokeErr = err
				}
			} else {
				*pending = *metrics.NewTally() // lost: nothing can be committed
			}
			mu.Unlock()
			inner(c, k, r)
		}
	}
	o := append(p.clientOpts(),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(revoked("revoked")),
		kgo.OnPartitionsLost(revoked("lost")),
	)
	var err error
	if cl, err = kgo.NewClient(o...); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	// Rebalances are blocked while a poll's records are processed, so
	// closing must allow the final one (leaving the group) to proceed.
	defer cl.CloseAllowingRebalance()
	produce = func(r *kgo.Record) {
		cl.Produce(flushCtx, r, func(r *kgo.Record, err error) {
			if err != nil {
				perr.set(&kclient.TopicError{Topic: r.Topic, Err: err})
			}
		})
	}
	produceChangelog = func(r *kgo.Record) {
		cl.Produce(flushCtx, r, func(r *kgo.Record, err error) {
			if err != nil {
				perr.set(&kclient.TopicError{Topic: r.Topic, Err: err})
				return
			}
			p.produced(r)
		})
	}
	interval := cfg.CommitInterval.D()
	last := time.Now()
	for {
		pollCtx, cancel := context.WithDeadline(ctx, last.Add(interval))
		fetches := cl.PollRecords(pollCtx, p.opts.maxPoll)
		cancel()
		p.st.loop()
		if err := p.pollErrors(fetches); err != nil {
			return err
		}
		mu.Lock()
		abandon := func(err error) error {
			failed = true
			*pending = *metrics.NewTally()
			p.samples.discard()
			mu.Unlock()
			return err
		}
		tally, perr2 := p.processFetches(ctx, fetches, produce)
		if perr2 != nil {
			return abandon(perr2)
		}
		pending.Add(tally)
		if err := p.idleAdvance(time.Now(), produce, pending); err != nil {
			return abandon(err)
		}
		if err := p.assemblyTick(time.Now(), p.samples.wrap(produce), pending); err != nil {
			return abandon(err)
		}
		var cerr error
		if ctx.Err() != nil || time.Since(last) >= interval || pending.Records() >= cfg.CommitRecords || perr.get() != nil {
			cerr = commit()
			last = time.Now()
			if cerr == nil {
				p.markReady(cl)
			}
		}
		if cerr == nil {
			cerr = revokeErr
		}
		mu.Unlock()
		if cerr != nil {
			// Uncommitted records are processed again by the next
			// session: duplicates are possible, loss is not.
			p.st.ready.set(false, cerr.Error())
			return cerr
		}
		if ctx.Err() != nil {
			p.log.Info("stopping: offsets committed, leaving the group")
			return nil
		}
		cl.AllowRebalance()
	}
}

// markReady sets ready after a successful commit once the group is joined.
func (p *Processor) markReady(cl *kgo.Client) {
	if _, gen := cl.GroupMetadata(); gen < 0 || !p.st.isJoined() {
		p.st.ready.set(false, "joining consumer group "+p.top.Config.ApplicationID)
		return
	}
	if why := p.st.lostReason(); why != "" {
		p.st.ready.set(false, why)
		return
	}
	p.st.ready.set(true, "ok")
}
