package runtime

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// purgeRepartition deletes, every topics.purge_interval until ctx ends,
// the records of repartition topics below the group's committed offsets,
// as Kafka Streams does: repartition topics never expire by time (a
// replay's records carry old timestamps), so without this they would
// grow without bound. Each instance purges the partitions assigned to it;
// a committed offset is one stage two has moved past for good, so
// deleting below it never loses a record, whoever does it.
func (p *Processor) purgeRepartition(ctx context.Context, adm *kadm.Client) {
	rep, _ := p.top.InternalTopics()
	if len(rep) == 0 {
		return
	}
	t := time.NewTicker(p.top.Settings.Topics.PurgeInterval.D())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		reqCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		p.purgeOnce(reqCtx, adm, rep)
		cancel()
	}
}

// purgeOnce is one purge round; failures are logged and counted, and the
// next round tries again.
func (p *Processor) purgeOnce(ctx context.Context, adm *kadm.Client, rep []string) {
	fail := func(topic, what string, err error) {
		if ctx.Err() != nil {
			return
		}
		p.m.PurgeErrors.WithLabelValues(topic).Inc()
		p.log.Warn("purge of repartition topic failed; retrying at the next interval", "topic", topic, "step", what, "err", err)
	}
	committed, err := adm.FetchOffsets(ctx, p.top.Settings.ApplicationID)
	if err != nil {
		for _, t := range rep {
			fail(t, "fetch committed offsets", err)
		}
		return
	}
	starts, err := adm.ListStartOffsets(ctx, rep...)
	if err != nil {
		for _, t := range rep {
			fail(t, "list start offsets", err)
		}
		return
	}
	del := kadm.Offsets{}
	before := map[tp]int64{}
	for _, t := range rep {
		for part, lo := range starts[t] {
			if lo.Err != nil || !p.obs.Assigned(t, part) {
				continue
			}
			c, ok := committed.Lookup(t, part)
			if !ok || c.Err != nil || c.At <= lo.Offset {
				continue
			}
			del.Add(kadm.Offset{Topic: t, Partition: part, At: c.At, LeaderEpoch: -1})
			before[tp{t, part}] = lo.Offset
		}
	}
	if len(del) == 0 {
		return
	}
	resp, err := adm.DeleteRecords(ctx, del)
	if err != nil {
		for t := range del {
			fail(t, "delete records", err)
		}
		return
	}
	for t, ps := range resp {
		for part, r := range ps {
			if r.Err != nil {
				fail(t, "delete records", r.Err)
				continue
			}
			if n := r.LowWatermark - before[tp{t, part}]; n > 0 {
				p.m.Purged.WithLabelValues(t).Add(float64(n))
				p.log.Debug("purged repartition records", "topic", t, "partition", part, "below", r.LowWatermark, "records", n)
			}
		}
	}
}
