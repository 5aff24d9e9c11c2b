package runtime

// Offsets stranded by a lost transaction marker.
//
// Under exactly-once a session reads its committed offsets with
// RequireStable (KIP-447): while a transaction holds offsets of a partition
// pending, the group coordinator answers UNSTABLE_OFFSET_COMMIT and the
// session waits. The pending offsets are settled by the transaction's
// marker. A broker restarted while a commit's markers were being written
// can record the transaction as complete and yet never write its marker to
// __consumer_offsets (seen with Kafka 4.4: the transaction is
// CompleteCommit, the offsets stay pending across broker restarts), and
// every member then waits for good.
//
// The group coordinator settles every pending offset of a producer ID at
// that producer's next marker, whatever transaction wrote them. The router
// therefore re-ends its own last transaction: a transaction with the same
// transactional ID that adds the group (AddOffsetsToTxn) and nothing else,
// ended with the outcome the transaction coordinator recorded for the last
// one. Its marker settles the stranded offsets as the lost one would have:
// committed offsets of a committed transaction apply, those of an aborted
// one are dropped. Nothing else changes (the transaction writes no record),
// so doing it when nothing is stranded is harmless.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sidestream/sidestream/internal/kclient"
)

// errStranded ends a session whose partitions stay unstable: the next
// session starts by re-ending the last transaction.
var errStranded = errors.New("committed offsets stay pending (UNSTABLE_OFFSET_COMMIT) past the transaction timeout: a transaction marker was lost")

// strandedAfter is how long a partition must answer UNSTABLE_OFFSET_COMMIT
// before its offsets count as stranded: a genuinely open transaction is
// aborted by the broker within the transaction timeout plus its check
// interval (transaction.abort.timed.out.transaction.cleanup.interval.ms,
// 10 s by default).
func strandedAfter(txnTimeout time.Duration) time.Duration { return txnTimeout + 15*time.Second }

// strandedWatch notices, during a session, partitions that stay unstable:
// it probes the quiet ones (a partition the session reads makes progress
// and cannot be waiting for its offsets) in the background and reports
// errStranded once one has answered UNSTABLE_OFFSET_COMMIT at every probe
// for longer than strandedAfter.
type strandedWatch struct {
	every time.Duration // between probes
	after time.Duration // unstable this long: stranded
	probe func(ctx context.Context, parts map[string][]int32) (map[string][]int32, error)

	mu      sync.Mutex
	running bool
	last    time.Time
	since   map[tp]time.Time // first of an unbroken run of unstable answers
	stuck   []tp
}

func newStrandedWatch(every, after time.Duration, probe func(context.Context, map[string][]int32) (map[string][]int32, error)) *strandedWatch {
	return &strandedWatch{every: every, after: after, probe: probe, since: map[tp]time.Time{}}
}

// check is called from the session loop with the partitions quiet for at
// least w.every; it starts a probe when one is due and returns errStranded
// when a partition is stranded.
func (w *strandedWatch) check(ctx context.Context, now time.Time, quiet map[string][]int32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.stuck) > 0 {
		return fmt.Errorf("%w: %v", errStranded, w.stuck)
	}
	if w.running || now.Sub(w.last) < w.every {
		return nil
	}
	w.last = now
	if len(quiet) == 0 {
		clear(w.since)
		return nil
	}
	w.running = true
	go func() {
		ctx, cancel := context.WithTimeout(ctx, w.every)
		defer cancel()
		unstable, err := w.probe(ctx, quiet)
		w.record(now, quiet, unstable, err)
	}()
	return nil
}

// record applies one probe's answer: an error proves nothing either way.
func (w *strandedWatch) record(now time.Time, asked, unstable map[string][]int32, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running = false
	if err != nil {
		return
	}
	bad := map[tp]bool{}
	for t, ps := range unstable {
		for _, p := range ps {
			bad[tp{t, p}] = true
		}
	}
	for k := range w.since {
		if !bad[k] {
			delete(w.since, k)
		}
	}
	for t, ps := range asked {
		for _, p := range ps {
			k := tp{t, p}
			if !bad[k] {
				continue
			}
			first, ok := w.since[k]
			if !ok {
				w.since[k] = now
			} else if now.Sub(first) >= w.after {
				w.stuck = append(w.stuck, k)
			}
		}
	}
}

// settleStranded runs between two exactly-once sessions: when a consumed
// partition answers UNSTABLE_OFFSET_COMMIT and this instance's last
// transaction is complete, it re-ends that transaction (see the top of
// this file). Any other state is left alone: an open transaction is ended
// by the next session's producer initialisation or by the broker's
// timeout, and after a producer initialisation (state Empty) the last
// outcome is no longer known.
func (p *Processor) settleStranded(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	parts, err := p.consumedPartitions(ctx)
	if err != nil {
		p.log.Warn("could not check for stranded offsets", "err", err)
		return
	}
	unstable, err := kclient.UnstablePartitions(ctx, p.admCl, p.top.Settings.ApplicationID, parts)
	if err != nil {
		p.log.Warn("could not check for stranded offsets", "err", err)
		return
	}
	if len(unstable) == 0 {
		return
	}
	txnID := p.TransactionalID()
	described, err := p.adm.DescribeTransactions(ctx, txnID)
	if err != nil {
		p.log.Warn("could not describe the last transaction", "transactional_id", txnID, "err", err)
		return
	}
	d, ok := described[txnID]
	if !ok || d.Err != nil {
		p.log.Info("offsets pending, but this instance has no transaction to re-end", "unstable", unstable, "transactional_id", txnID)
		return
	}
	var commit bool
	switch d.State {
	case "CompleteCommit":
		commit = true
	case "CompleteAbort":
	default:
		p.log.Info("offsets pending; the last transaction is not complete, leaving it to the broker", "unstable", unstable, "state", d.State)
		return
	}
	if err := p.reEndTransaction(ctx, commit); err != nil {
		p.log.Warn("could not re-end the last transaction", "transactional_id", txnID, "err", err)
		return
	}
	outcome := map[bool]string{true: "commit", false: "abort"}[commit]
	p.m.StrandedRepairs.WithLabelValues(outcome).Inc()
	p.log.Warn("re-ended the last transaction to settle offsets a lost transaction marker left pending",
		"transactional_id", txnID, "outcome", outcome, "unstable", unstable)
}

// reEndTransaction begins a transaction with this instance's transactional
// ID, adds the group to it and ends it with commit. It initialises the
// producer ID, so it fences any producer still using the ID.
func (p *Processor) reEndTransaction(ctx context.Context, commit bool) error {
	txnID, group := p.TransactionalID(), p.top.Settings.ApplicationID
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(p.top.Settings.Brokers...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(p.opts.txnTimeout),
	}, p.opts.kgoOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("init producer ID: %w", err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, id, epoch, group
	addResp, err := add.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(addResp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("add the group to the transaction: %w", err)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, id, epoch, commit
	endResp, err := end.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(endResp.ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("end the transaction: %w", err)
	}
	return nil
}

// consumedPartitions lists every partition of the topics the group reads.
func (p *Processor) consumedPartitions(ctx context.Context) (map[string][]int32, error) {
	details, err := p.adm.ListTopics(ctx, p.consumedTopics()...)
	if err != nil {
		return nil, err
	}
	out := map[string][]int32{}
	for topic, d := range details {
		if d.Err != nil {
			continue
		}
		for part := range d.Partitions {
			out[topic] = append(out[topic], part)
		}
	}
	return out, nil
}
