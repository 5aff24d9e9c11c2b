package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/observe"
	"github.com/sidestream/sidestream/internal/registry"
	"github.com/sidestream/sidestream/internal/stagetwo"
)

// committer is how one delivery guarantee opens and ends a commit
// interval; the loop (commitLoop) does everything else: poll, process,
// idle advance, assembly tick, marks, changelog records, the flush and
// the decision to end. Only the loop calls end, so only it ends
// transactions. The two implementations are eosCommitter (exactly-once)
// and aloCommitter (at-least-once); each method states where they differ.
type committer interface {
	// client is the session's client: the loop polls, produces and
	// flushes through it.
	client() *kgo.Client
	// begin opens an interval (exactly-once: a transaction begins;
	// at-least-once: nothing). Its clock starts when begin returns.
	begin() error
	// polled sees each poll before its records are processed; false
	// says to skip them (exactly-once: always true; at-least-once: it
	// notes where a rewind takes a partition without a committed
	// offset, and false after it rewound the consumer for a produce
	// failure met in the revoke callback, whose poll read past it).
	polled(fetches kgo.Fetches) bool
	// abandon ends an interval whose batch failed (a store error, a
	// restore that could not finish): nothing of it may commit
	// (exactly-once: the transaction is aborted; at-least-once: the
	// revoke callback of the closing client commits nothing).
	abandon()
	// end commits the flushed interval, or aborts it after prodErr (the
	// first produce failure), with the accounting of each outcome: both
	// guarantees go on in the session after a failure kclient.Classify
	// does not call Fatal, with the consumer back at the committed
	// offsets. committed says the offsets were committed; an error ends
	// the session.
	// at says when the loop started to end the interval (before the
	// marks) and when it started the flush: each guarantee times its
	// commit from one of them.
	end(ctx context.Context, at endTimes, pending *metrics.Tally, prodErr error) (committed bool, err error)
	// check reports, after each poll, a failure that happened outside the
	// loop (at-least-once: a commit from the revoke callback).
	check() error
	// fail is the session's last word on an error of end or check
	// (at-least-once: not ready, with the error).
	fail(err error) error
	// next runs after each poll that did not stop the session; ended says
	// an interval ended (exactly-once: the stranded-offset watch;
	// at-least-once: the rewind a produce failure left due, then the
	// rebalance blocked during processing may run, then the backoff).
	next(ctx context.Context, ended bool) error
	// registryAborted follows the abandon of a batch the schema registry
	// could not decode (registryoutage.go): it backs off; exactly-once
	// goes on in the session, at-least-once ends it (an error).
	registryAborted(ctx context.Context, err error) error
	// held follows the abandon of a batch that met a held route
	// (held.go): the route is paused and the session goes on.
	held(ctx context.Context, he *stagetwo.HeldError) error
	// endsWhenDrained says an interval ends early when a poll leaves no
	// fetched record (commit_when_drained; exactly-once only: an
	// at-least-once record is visible once produced, so an early offset
	// commit would buy nothing).
	endsWhenDrained() bool
	// stopping is the log line of a stop on ctx after an interval ended.
	stopping() string
	close()
}

// commitLoop is one group session's poll-process-commit loop, the same
// for both guarantees.
type commitLoop struct {
	p      *Processor
	c      committer
	endCtx context.Context // never cancelled (see eosCommitter.end)
	perr   produceErr
	// mu is held while a poll's records are processed and the interval
	// ends; the at-least-once revoke callback takes it to end the
	// interval itself.
	mu      sync.Mutex
	pending *metrics.Tally
	// lastEnd is how long the last interval's end took (flush and
	// commit): the drained floor keeps an interval that ends early at
	// least drainedShare times as long (drainedFloor).
	lastEnd time.Duration
	// produced is every output's promise, made once: a closure made per
	// Produce was one allocation per record.
	produced func(*kgo.Record, error)
	// paused says the session's client has the inputs paused by an
	// objective (syncPause, before each poll).
	paused bool
	// written counts the interval's records the broker acknowledged, by
	// output topic.
	written *written
}

func newCommitLoop(ctx context.Context, p *Processor) *commitLoop {
	l := &commitLoop{p: p, endCtx: context.WithoutCancel(ctx), pending: metrics.NewTally(), written: newWritten(p.top.Writers(), p.writerOf)}
	l.produced = func(r *kgo.Record, err error) {
		if err != nil {
			l.perr.set(&kclient.TopicError{Topic: r.Topic, Err: err})
			return
		}
		l.written.acked(r.Topic)
	}
	return l
}

// written counts acknowledged records per output topic. The topics the
// processor started with are in a map built once and only read after, so
// the promises (on the client's goroutines) read it without a lock; each
// count is atomic. A topic outside it (a computed topic, a route a reload
// added) is counted in extra, its route found once by routeOf; records to
// topics no route owns (repartition records, marks) are not counted.
type written struct {
	static  map[string]*writtenTopic
	extra   sync.Map // topic -> *writtenTopic
	routeOf func(topic string) string
}

type writtenTopic struct {
	route string
	n     atomic.Int64
}

func newWritten(writers map[string]string, routeOf func(string) string) *written {
	w := &written{static: map[string]*writtenTopic{}, routeOf: routeOf}
	for topic, route := range writers {
		if topic != "" {
			w.static[topic] = &writtenTopic{route: route}
		}
	}
	return w
}

func (w *written) acked(topic string) {
	if c := w.static[topic]; c != nil {
		c.n.Add(1)
		return
	}
	if c, ok := w.extra.Load(topic); ok {
		c.(*writtenTopic).n.Add(1)
		return
	}
	route := ""
	if w.routeOf != nil {
		route = w.routeOf(topic)
	}
	c, _ := w.extra.LoadOrStore(topic, &writtenTopic{route: route})
	c.(*writtenTopic).n.Add(1)
}

// take moves the counts into t: after the flush every promise of the
// interval has run, so they are the interval's. The tally is observed
// only if the interval commits: records of an aborted transaction (or of
// an at-least-once interval whose offsets were not committed) are never
// counted.
func (w *written) take(t *metrics.Tally) {
	for topic, c := range w.static {
		t.AddWritten(c.route, topic, int(c.n.Swap(0)))
	}
	w.extra.Range(func(k, v any) bool {
		if c := v.(*writtenTopic); c.route != "" {
			t.AddWritten(c.route, k.(string), int(c.n.Swap(0)))
		}
		return true
	})
}

// reset drops what an abandoned interval left.
func (w *written) reset() {
	for _, c := range w.static {
		c.n.Store(0)
	}
	w.extra.Range(func(_, v any) bool {
		v.(*writtenTopic).n.Store(0)
		return true
	})
}

// produce sends an output or a mark; a failure fails the interval.
func (l *commitLoop) produce(r *kgo.Record) {
	l.c.client().Produce(l.endCtx, r, l.produced)
}

// produceChangelog sends a changelog record; once acknowledged, the
// window stage knows its offset.
func (l *commitLoop) produceChangelog(r *kgo.Record) {
	l.c.client().Produce(l.endCtx, r, func(r *kgo.Record, err error) {
		if err != nil {
			l.perr.set(&kclient.TopicError{Topic: r.Topic, Err: err})
			return
		}
		l.p.stage.Produced(r)
	})
}

// run polls and processes until ctx ends (then it ends the interval and
// returns nil) or the session fails.
func (l *commitLoop) run(ctx context.Context) error {
	p, c := l.p, l.c
	defer c.close()
	interval := p.top.Settings.CommitInterval.D()
	for {
		// No interval is open: a reload's stage one takes over here, so
		// one transaction's records are routed by one version.
		p.installRouting()
		if err := c.begin(); err != nil {
			return err
		}
		start := time.Now()
		l.mu.Lock()
		*l.pending = *metrics.NewTally()
		l.perr.reset()
		l.written.reset()
		l.mu.Unlock()
		for ended := false; !ended; {
			l.paused = p.syncPause(c.client(), l.paused)
			pollCtx, cancel := context.WithDeadline(ctx, l.pollDeadline(start, interval))
			fetches := c.client().PollRecords(pollCtx, p.opts.maxPoll)
			cancel()
			p.obs.Loop()
			if err := p.pollErrors(fetches); err != nil {
				return err
			}
			var err error
			if ended, err = l.step(ctx, fetches, start, interval); err != nil {
				return err
			}
			if ended && ctx.Err() != nil {
				p.log.Info(c.stopping())
				return nil
			}
			if err := c.next(ctx, ended); err != nil {
				return err
			}
		}
	}
}

// step processes one poll and ends the interval when it is due: the
// interval has passed, it holds commit_records records, a produce
// failed, or ctx ended.
func (l *commitLoop) step(ctx context.Context, fetches kgo.Fetches, start time.Time, interval time.Duration) (ended bool, err error) {
	p, c := l.p, l.c
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.polled(fetches) {
		return false, nil
	}
	if err := l.process(ctx, fetches); err != nil {
		c.abandon()
		p.samples.discard()
		if registry.IsRetryable(err) {
			return true, c.registryAborted(ctx, err)
		}
		if he := asHeld(err); he != nil {
			return true, c.held(ctx, he)
		}
		return false, err
	}
	if ctx.Err() != nil || time.Since(start) >= interval || l.pending.Records() >= p.top.Settings.CommitRecords || l.perr.get() != nil || l.drained(start, interval) {
		ended = true
		had := l.pending.Records() > 0
		began := time.Now()
		committed, err := l.end()
		l.lastEnd = time.Since(began)
		if err != nil {
			return true, c.fail(err)
		}
		if committed {
			p.readyAfterCommit(c, had)
		}
	}
	if err := c.check(); err != nil {
		return ended, c.fail(err)
	}
	return ended, nil
}

// drainedShare: an interval that ends early on a drained input lasts at
// least this many times as long as the last interval's end took, so at
// most about a fifth of the time goes to commits.
const drainedShare = 4

// drainedFloor is the shortest interval that ends early on a drained
// input (commit_when_drained): a tenth of commit_interval, at most 10 ms,
// so a trickle of records does not become a transaction per record; and
// at least drainedShare times the last end (lastEnd), at most the whole
// interval. Without the second bound a router faster than its fetches
// finds the client's buffer empty between two fetches, ends a
// transaction every 10 ms and spends most of its time committing.
func drainedFloor(interval, lastEnd time.Duration) time.Duration {
	return min(max(min(interval/10, 10*time.Millisecond), drainedShare*lastEnd), interval)
}

// drained reports whether an interval may end early because its poll
// found the input drained: the committer wants it (exactly-once: the
// records become visible at the commit), the interval holds input
// records, it has lasted drainedFloor, and no fetched record waits in
// the client's buffer. l.mu is held.
func (l *commitLoop) drained(start time.Time, interval time.Duration) bool {
	return l.c.endsWhenDrained() && l.pending.Records() > 0 &&
		time.Since(start) >= drainedFloor(interval, l.lastEnd) &&
		l.c.client().BufferedFetchRecords() == 0
}

// pollDeadline is when the next poll gives up waiting for records: the
// interval's end, or its drainedFloor when the interval already holds
// records that a drained input would commit then.
func (l *commitLoop) pollDeadline(start time.Time, interval time.Duration) time.Time {
	end := start.Add(interval)
	if !l.c.endsWhenDrained() {
		return end
	}
	l.mu.Lock()
	held := l.pending.Records() > 0
	floor := start.Add(drainedFloor(interval, l.lastEnd))
	l.mu.Unlock()
	if held && time.Now().Before(floor) {
		return floor
	}
	return end
}

// process runs one poll through the stages, then the idle advance of
// window tasks and the assembly tick, into pending.
func (l *commitLoop) process(ctx context.Context, fetches kgo.Fetches) error {
	p := l.p
	tally, err := p.processFetches(ctx, fetches, l.produce)
	if err != nil {
		return err
	}
	l.pending.Add(tally)
	now := p.opts.clock() // read once a poll: router test's virtual clock counts on it
	if err := p.stage.IdleAdvance(now, l.produce, l.pending); err != nil {
		return err
	}
	return p.stage.AssemblyTick(now, p.samples.wrap(l.produce), l.pending)
}

// end ends the interval: its marks and changelog records go out, every
// promise runs (Flush), then the committer decides. l.mu is held.
func (l *commitLoop) end() (committed bool, err error) {
	at := endTimes{marks: time.Now()}
	for _, r := range l.p.marks(l.pending) {
		l.produce(r)
	}
	for _, r := range l.p.stage.ChangelogRecords(l.pending) {
		l.produceChangelog(r)
	}
	// Every promise has run once Flush returns: a record that failed
	// before reaching a broker (an output topic deleted, its metadata
	// never loaded) fails only its own promise, not the transaction,
	// so deciding before the flush would commit the offsets without
	// the record.
	at.flush = time.Now()
	if err := l.c.client().Flush(l.endCtx); err != nil {
		return false, fmt.Errorf("flush: %w", err)
	}
	l.written.take(l.pending)
	return l.c.end(l.endCtx, at, l.pending, l.perr.get())
}

// endTimes are when the loop began to end an interval: its marks, its
// flush.
type endTimes struct{ marks, flush time.Time }

// countCommitted accounts for a committed interval that held records
// (an empty one sends nothing: not a commit).
func (p *Processor) countCommitted(cl *kgo.Client, pending *metrics.Tally) {
	p.m.Observe(pending)
	p.observeObjectives(pending)
	p.committedGaps(pending)
	p.m.Commits.Inc()
	p.obs.Committed(committedOffsets(cl), time.Now())
}

// maxProduceBackoff bounds the wait before a batch whose produce failed
// is tried again (about 1 s, doubling while the failures go on; the
// registry outage's and the avro registration's too).
const maxProduceBackoff = 8 * time.Second

// markReady sets ready after a successful commit once the group is joined.
func (p *Processor) markReady(cl *kgo.Client) {
	_, gen := cl.GroupMetadata()
	p.obs.ReadyAfterCommit(gen >= 0, p.top.Settings.ApplicationID)
}

// runExactlyOnce is one group session under exactly-once: every output of
// one commit interval and the input offsets are one Kafka transaction.
// A rebalance aborts the open transaction (the session rewinds to the last
// committed offsets and the records are processed again), so a
// read_committed reader sees each input's effect once.
func (p *Processor) runExactlyOnce(ctx context.Context) error {
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
	p.pauseHeld(sess.Client())
	l := newCommitLoop(ctx, p)
	l.c = &eosCommitter{p: p, sess: sess, endCtx: l.endCtx,
		watch: newStrandedWatch(5*time.Second, strandedAfter(p.opts.txnTimeout),
			func(ctx context.Context, parts map[string][]int32) (map[string][]int32, error) {
				return kclient.UnstablePartitions(ctx, p.admCl, p.top.Settings.ApplicationID, parts)
			})}
	return l.run(ctx)
}

// eosCommitter ends each interval as one transaction of a
// kgo.GroupTransactSession.
type eosCommitter struct {
	p    *Processor
	sess *kgo.GroupTransactSession
	// endCtx is never cancelled: cancelling the context of End mid-commit
	// can report failure for a commit that happened (franz-go #1052).
	endCtx context.Context
	watch  *strandedWatch
	// wait is the backoff a produce failure left for next.
	wait time.Duration
}

func (c *eosCommitter) client() *kgo.Client     { return c.sess.Client() }
func (c *eosCommitter) close()                  { c.sess.Close() } // leaves the group
func (c *eosCommitter) check() error            { return nil }
func (c *eosCommitter) polled(kgo.Fetches) bool { return true } // End rewinds the session itself
func (c *eosCommitter) fail(err error) error {
	return err // Run says the session restarts
}
func (c *eosCommitter) endsWhenDrained() bool { return c.p.top.Settings.CommitWhenDrained }
func (c *eosCommitter) stopping() string      { return "stopping: transaction ended, leaving the group" }

func (c *eosCommitter) begin() error {
	if err := c.sess.Begin(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	return nil
}

// abandon aborts the open transaction: nothing of the batch commits, not
// even the side records sampled for the web view (the loop discards them).
func (c *eosCommitter) abandon() { _, _ = c.sess.End(c.endCtx, kgo.TryAbort) }

// next runs the stranded-offset watch after each transaction, once the
// group is joined.
func (c *eosCommitter) next(ctx context.Context, ended bool) error {
	if !ended {
		return nil
	}
	if wait := c.wait; wait > 0 {
		c.wait = 0
		c.p.idle(ctx, wait) // a stop ends the wait; the loop then ends
	}
	if now := time.Now(); c.p.obs.Joined() {
		return c.watch.check(ctx, now, c.p.obs.Quiet(now, c.watch.every))
	}
	return nil
}

// end commits the transaction (or aborts it after a produce failure) and
// accounts for it. The commit duration is timed from the flush to the
// end of End, for every outcome.
func (c *eosCommitter) end(ctx context.Context, at endTimes, pending *metrics.Tally, prodErr error) (bool, error) {
	p := c.p
	want := kgo.TryCommit
	if prodErr != nil {
		want = kgo.TryAbort
	}
	// Each input partition's offset carries its source progress, in the
	// same transaction (sources.go).
	committed, err := c.sess.End(kgo.PreTxnCommitFnContext(ctx, func(r *kmsg.TxnOffsetCommitRequest) error { return p.src.commitMeta(r) }), want)
	p.m.CommitDuration.Observe(time.Since(at.flush).Seconds())
	switch {
	case err != nil:
		p.samples.discard()
		p.m.Aborts.WithLabelValues(observe.AbortCommitError).Inc()
		return false, fmt.Errorf("end transaction: %w", err)
	case prodErr != nil:
		return false, c.produceAborted(prodErr)
	case !committed:
		p.samples.discard()
		p.gaps.rewind(c.sess.Client().CommittedOffsets())
		// The state in memory holds this transaction's changes: drop it,
		// the next records restore what the changelog committed.
		p.dropState(nil)
		if pending.Records() > 0 {
			p.m.Aborts.WithLabelValues(observe.AbortRebalance).Inc()
			p.log.Info("transaction aborted by a rebalance; the batch will be processed again", "records", pending.Records())
		}
		return false, nil
	}
	p.samples.committed()
	p.produceRetry.Reset()
	if !pending.Empty() {
		p.countCommitted(c.sess.Client(), pending)
	}
	p.stage.Checkpoint()
	return true, nil
}

// produceAborted accounts for a transaction aborted by a produce failure:
// the session goes on after a backoff, unless the producer cannot.
func (c *eosCommitter) produceAborted(prodErr error) error {
	p := c.p
	p.samples.discard()
	p.dropState(nil)
	p.gaps.rewind(c.sess.Client().CommittedOffsets())
	p.produceFailure(prodErr, "transaction aborted")
	if kclient.Classify(kclient.Produce, prodErr) == kclient.Fatal {
		return fmt.Errorf("produce: %w", prodErr)
	}
	c.wait = p.produceBackoff() // next waits it, under the loop's ctx
	return nil
}

// produceFailure accounts for an interval a produce failure left
// uncommitted, the same under both guarantees: the abort by reason (a
// refusal by the authorizer also by topic), /readyz's reason and the
// log. undone says what became of the interval.
func (p *Processor) produceFailure(prodErr error, undone string) {
	if topic, ok := kclient.AuthzRefused(prodErr); ok {
		p.m.Aborts.WithLabelValues(observe.AbortAuthorization).Inc()
		p.m.AuthzRefused.WithLabelValues(topic).Inc()
		why := fmt.Sprintf("%s: writes to topic %s refused by the broker's authorizer (%v); "+
			"grant this principal WRITE on the topic (an ACL); the batch is tried again, backing off up to %s", undone, topic, prodErr, maxProduceBackoff)
		p.obs.NotReady(why)
		p.log.Error("writes refused by an ACL; "+undone+", the batch will be tried again", "topic", topic, "err", prodErr)
		return
	}
	p.m.Aborts.WithLabelValues(observe.AbortProduceError).Inc()
	p.obs.NotReady(undone + ": produce failed: " + prodErr.Error())
	p.log.Error("produce failed; "+undone+", the batch will be processed again", "err", prodErr)
}

// produceBackoff is the wait before a batch whose produce failed is
// processed again: about 1 s, doubling to maxProduceBackoff while the
// failures go on (a commit resets it), so a persistent failure (a
// deleted topic, a refused ACL) gets room instead of a spin.
func (p *Processor) produceBackoff() time.Duration { return p.produceRetry.Next() }

// runAtLeastOnce is one group session under at-least-once: outputs go
// through an idempotent producer and input offsets are committed only
// after every output of the interval is acknowledged.
func (p *Processor) runAtLeastOnce(ctx context.Context) error {
	l := newCommitLoop(ctx, p)
	c := &aloCommitter{p: p, l: l, first: map[tp]int64{}}
	o := append(p.clientOpts(),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsRevoked(c.revoked("revoked")),
		kgo.OnPartitionsLost(c.revoked("lost")),
	)
	cl, err := kgo.NewClient(o...)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	c.cl, l.c = cl, c
	p.pauseHeld(cl)
	return l.run(ctx)
}

// aloCommitter commits the offsets of each interval after its outputs
// are acknowledged, from the loop and from the revoke callback (under
// the loop's mu, never both at once). A produce failure commits nothing
// and, unless it is fatal, rewinds the consumer to the committed offsets
// in the session, as an aborted transaction does: the interval's records
// are processed again (the outputs already written are written twice).
type aloCommitter struct {
	p  *Processor
	l  *commitLoop
	cl *kgo.Client
	// failed is set when a batch failed: the session ends and leaving
	// the group runs the revoke callback, which must then commit nothing.
	failed    bool
	revokeErr error // a commit of the revoke callback that failed
	// rewindDue: a produce failed and the consumer is not rewound yet,
	// so its positions are past outputs never written; until the rewind
	// (next, or polled after the revoke callback met the failure) nothing
	// may commit. l.mu guards it.
	rewindDue bool
	// wait is the backoff a produce failure left for next.
	wait time.Duration
	// first is the first offset polled of each partition this session:
	// where a rewind takes a partition the group has no commit of (the
	// client's CommittedOffsets has none to give).
	first map[tp]int64
}

func (c *aloCommitter) client() *kgo.Client { return c.cl }

// endsWhenDrained: an at-least-once interval runs its full length.
func (c *aloCommitter) endsWhenDrained() bool { return false }

// close allows the final rebalance (leaving the group): rebalances are
// blocked while a poll's records are processed.
func (c *aloCommitter) close() { c.cl.CloseAllowingRebalance() }

// begin opens nothing: offsets are committed by end alone.
func (c *aloCommitter) begin() error { return nil }

// abandon makes the revoke callback commit nothing.
func (c *aloCommitter) abandon() {
	c.failed = true
	*c.l.pending = *metrics.NewTally()
}

func (c *aloCommitter) check() error { return c.revokeErr }

// fail marks the router not ready: uncommitted records are processed
// again by the next session; duplicates are possible, loss is not.
func (c *aloCommitter) fail(err error) error {
	c.p.obs.NotReady(err.Error())
	return err
}

// polled notes the first offset of the partitions new to this session;
// when the revoke callback left a rewind due, it rewinds and skips the
// poll (its records come from past the failure; they are fetched
// again). It runs where SetOffsets belongs: on the polling goroutine,
// with the rebalance blocked. l.mu is held.
func (c *aloCommitter) polled(fetches kgo.Fetches) bool {
	fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if len(ftp.Records) == 0 {
			return
		}
		if _, ok := c.first[tp{ftp.Topic, ftp.Partition}]; !ok {
			c.first[tp{ftp.Topic, ftp.Partition}] = ftp.Records[0].Offset
		}
	})
	if !c.rewindDue {
		return true
	}
	c.rewind()
	return false
}

// next rewinds after a produce failure of the interval just ended, lets
// the rebalance blocked since the poll run, then waits the failure's
// backoff (a rebalance may run meanwhile: nothing is left to commit).
func (c *aloCommitter) next(ctx context.Context, _ bool) error {
	c.l.mu.Lock()
	if c.rewindDue {
		c.rewind()
	}
	wait := c.wait
	c.wait = 0
	c.l.mu.Unlock()
	c.cl.AllowRebalance()
	if wait > 0 {
		c.p.idle(ctx, wait) // a stop ends the wait; the loop then ends
	}
	return nil
}

// rewind sets the consumer back to the committed offsets (a partition
// without a commit: to its first offset this session) and the gap
// tracker with it, as the transact session does after an abort. The
// client drops what it had fetched beyond them. Partitions revoked since
// are no longer consumed: SetOffsets skips them, their next owner starts
// at the committed offsets. l.mu is held.
func (c *aloCommitter) rewind() {
	to := c.cl.CommittedOffsets()
	if to == nil {
		to = map[string]map[int32]kgo.EpochOffset{}
	}
	for k, at := range c.first {
		if _, ok := to[k.topic][k.partition]; ok {
			continue
		}
		if to[k.topic] == nil {
			to[k.topic] = map[int32]kgo.EpochOffset{}
		}
		to[k.topic][k.partition] = kgo.EpochOffset{Epoch: -1, Offset: at}
	}
	c.cl.SetOffsets(to)
	c.p.gaps.rewind(to)
	c.rewindDue = false
}

func (c *aloCommitter) stopping() string { return "stopping: offsets committed, leaving the group" }

// end commits the offsets polled, unless a produce failed. The commit
// duration is timed from the marks to the checkpoint's end, for
// intervals that held records.
func (c *aloCommitter) end(ctx context.Context, at endTimes, pending *metrics.Tally, prodErr error) (bool, error) {
	p := c.p
	if prodErr != nil {
		return false, c.produceFailed(prodErr)
	}
	if err := c.cl.CommitUncommittedOffsets(kgo.PreCommitFnContext(ctx, func(r *kmsg.OffsetCommitRequest) error { return p.src.commitMeta(r) })); err != nil {
		p.samples.discard()
		return false, fmt.Errorf("commit offsets: %w", err)
	}
	p.samples.committed()
	p.produceRetry.Reset()
	p.stage.Checkpoint()
	if pending.Empty() {
		return true, nil
	}
	p.m.CommitDuration.Observe(time.Since(at.marks).Seconds())
	p.countCommitted(c.cl, pending)
	*pending = *metrics.NewTally()
	return true, nil
}

// produceFailed ends an interval a produce failed in, committing nothing:
// accounted as exactly-once accounts for its aborted transaction; a fatal
// error (kclient.Classify) ends the session, any other leaves a rewind
// and a backoff due, and the session goes on. The state in memory holds
// the interval's changes: it is dropped, the next records restore what
// the changelog holds.
func (c *aloCommitter) produceFailed(prodErr error) error {
	p := c.p
	p.samples.discard()
	p.dropState(nil)
	*c.l.pending = *metrics.NewTally()
	p.produceFailure(prodErr, "offsets not committed")
	if kclient.Classify(kclient.Produce, prodErr) == kclient.Fatal {
		c.failed = true // leaving the group commits nothing
		return fmt.Errorf("produce: %w", prodErr)
	}
	c.l.perr.reset() // every promise ran (the flush): the failure is handled
	c.rewindDue = true
	c.wait = p.produceBackoff()
	return nil
}

// revoked wraps onRevoked: before partitions are revoked, what was
// processed of them is committed (unless the batch failed or a rewind is
// due); lost partitions can commit nothing. A produce failure met here
// leaves its rewind to the loop (polled): this callback runs off the
// polling goroutine, where SetOffsets is not safe.
func (c *aloCommitter) revoked(kind string) func(context.Context, *kgo.Client, map[string][]int32) {
	inner := c.p.onRevoked(kind)
	return func(ctx context.Context, k *kgo.Client, r map[string][]int32) {
		c.l.mu.Lock()
		if kind == "revoked" && !c.failed && !c.rewindDue {
			if _, err := c.l.end(); err != nil && c.revokeErr == nil {
				c.revokeErr = err
			}
		} else {
			*c.l.pending = *metrics.NewTally() // nothing can be committed
		}
		for t, ps := range r {
			for _, part := range ps {
				delete(c.first, tp{t, part})
			}
		}
		c.l.mu.Unlock()
		inner(ctx, k, r)
	}
}
