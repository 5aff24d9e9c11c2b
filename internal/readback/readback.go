// Package readback reads topics to their end as a read_committed consumer
// would, for the demo's verdict and the tests. It knows where the end is
// (the high watermark once no transaction is open) instead of waiting for
// silence, so a slow machine cannot make it stop early.
package readback

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadCommitted returns every committed record of topics, in partition
// order. It first waits (bounded by ctx) until no partition has an open
// transaction, then reads each partition up to its high watermark, keeping
// control records only to know where it is.
func ReadCommitted(ctx context.Context, brokers []string, topics ...string) ([]*kgo.Record, error) {
	return ReadCommittedWith(ctx, brokers, nil, topics...)
}

// ReadCommittedWith is ReadCommitted with more client options for both of
// its clients, such as the TLS and SASL options of kclient.SecurityOpts.
func ReadCommittedWith(ctx context.Context, brokers []string, opts []kgo.Opt, topics ...string) ([]*kgo.Record, error) {
	var out []*kgo.Record
	err := Each(ctx, brokers, opts, func(r *kgo.Record) error {
		out = append(out, r)
		return nil
	}, topics...)
	return out, err
}

// Each hands every committed record of topics to fn, in partition order,
// without keeping them: what ReadCommittedWith collects, for a reader of
// more records than fit in memory (router audit). An error from fn stops
// the read and is returned.
func Each(ctx context.Context, brokers []string, opts []kgo.Opt, fn func(*kgo.Record) error, topics ...string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	ends, err := stableEnds(ctx, adm, topics)
	var starts kadm.ListedOffsets
	if err == nil {
		starts, err = adm.ListStartOffsets(ctx, topics...)
	}
	cl.Close()
	if err != nil {
		return err
	}
	offsets, remaining := readFrom(ends, starts)
	if remaining == 0 {
		return nil
	}
	rc, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(offsets),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords()}, opts...)...)
	if err != nil {
		return err
	}
	defer rc.Close()
	done := map[string]map[int32]bool{}
	for remaining > 0 {
		fs := rc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read back: %d partitions not read to the end: %w", remaining, err)
		}
		for _, fe := range fs.Errors() {
			return fmt.Errorf("read back %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		var ferr error
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil {
				return
			}
			if !r.Attrs.IsControl() {
				ferr = fn(r)
			}
			if r.Offset+1 >= ends[r.Topic][r.Partition] && !done[r.Topic][r.Partition] {
				if done[r.Topic] == nil {
					done[r.Topic] = map[int32]bool{}
				}
				done[r.Topic][r.Partition] = true
				remaining--
			}
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}

// readFrom is where each partition with records left is read from, and
// how many there are.
func readFrom(ends map[string]map[int32]int64, starts kadm.ListedOffsets) (map[string]map[int32]kgo.Offset, int) {
	offsets := map[string]map[int32]kgo.Offset{}
	remaining := 0
	for t, ps := range ends {
		for p, end := range ps {
			// A partition whose records the broker deleted (retention,
			// DeleteRecords) has nothing left to read: waiting for its end
			// would never finish. What was deleted is missing from the
			// result, for the caller's count to show.
			start, ok := starts.Lookup(t, p)
			if ok && start.Err == nil && start.Offset >= end {
				continue
			}
			if end > 0 {
				if offsets[t] == nil {
					offsets[t] = map[int32]kgo.Offset{}
				}
				offsets[t][p] = kgo.NewOffset().AtStart()
				remaining++
			}
		}
	}
	return offsets, remaining
}

// stableEnds waits until every partition's last stable offset equals its
// high watermark and returns those ends.
func stableEnds(ctx context.Context, adm *kadm.Client, topics []string) (map[string]map[int32]int64, error) {
	for {
		hw, err := adm.ListEndOffsets(ctx, topics...)
		if err == nil {
			var ls kadm.ListedOffsets
			if ls, err = adm.ListCommittedOffsets(ctx, topics...); err == nil {
				ends := map[string]map[int32]int64{}
				stable := true
				hw.Each(func(o kadm.ListedOffset) {
					if o.Err != nil {
						err = fmt.Errorf("end offset of %s[%d]: %w", o.Topic, o.Partition, o.Err)
						return
					}
					if l, ok := ls.Lookup(o.Topic, o.Partition); !ok || l.Offset != o.Offset {
						stable = false
					}
					if ends[o.Topic] == nil {
						ends[o.Topic] = map[int32]int64{}
					}
					ends[o.Topic][o.Partition] = o.Offset
				})
				if err == nil && stable {
					return ends, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("a transaction stayed open")
			}
			return nil, fmt.Errorf("read back: waiting for stable end offsets: %v: %w", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
