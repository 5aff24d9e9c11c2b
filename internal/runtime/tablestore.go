package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sidestream/sidestream/internal/lookup"
	"github.com/sidestream/sidestream/internal/plan"
)

// tableCheckpoint is a Pebble table's position in its topic, committed
// with the rows it covers: the topic's identity, the next offset of each
// partition, and a time at which every record past those offsets was
// written later (a tombstone among them is kept by compaction for
// delete.retention.ms after that).
type tableCheckpoint struct {
	TopicID    string          `json:"topic_id"`
	Partitions int             `json:"partitions"`
	Next       map[int32]int64 `json:"next"`
	At         int64           `json:"at"` // unix ms
}

// caughtUpMargin is how much earlier than the poll that reached the
// topic's end a checkpoint's time is set: the fetch that answered may
// have been sent a little before.
const caughtUpMargin = time.Minute

// tableDir is where a table's Pebble store lives: beside the task
// stores (named after changelog topics, all ending in -changelog).
func tableDir(stateDir, name string) string { return filepath.Join(stateDir, "tables", name) }

// tableFingerprint names everything the stored rows were built from: a
// store built from anything else is rebuilt.
func tableFingerprint(n *plan.TableNode) string {
	return fmt.Sprintf("v1 topic=%q format=%q key=%q mode=%q time=%q history=%d max_entries=%d max_bytes=%d",
		n.Topic, n.Format, n.Key, n.Mode, n.Time, n.History.Milliseconds(), n.MaxEntries, n.MaxBytes)
}

// openTableStore opens a pebble table's store; a store built from other
// settings is wiped (logged and counted). The stored rows are the values
// as written, read again with the table's own decoder (a registry
// format's waits for the registry, as a load does, until ctx ends).
func (p *Processor) openTableStore(ctx context.Context, t *table, spec lookup.Spec) (*lookup.Table, error) {
	dir := tableDir(p.top.Settings.State.Dir, t.node.Name)
	decode := func(raw []byte) (lookup.Row, error) {
		r, err := t.decode(ctx, raw)
		return r.fields, err
	}
	d, reason, err := lookup.OpenPebble(dir, spec, tableFingerprint(t.node), decode)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", t.node.Name, err)
	}
	if reason != "" {
		p.rebuilt(t, reason)
	}
	t.durable = d
	return d.Table, nil
}

func (p *Processor) rebuilt(t *table, why string) {
	t.m.Rebuilds.WithLabelValues(t.node.Name).Inc()
	p.log.Warn("lookup table store rebuilt: reading its whole topic", "table", t.node.Name, "why", why)
}

// resumeFrom is where a pebble table's load starts: its checkpoint's
// offsets when they still fit the topic, else (the store wiped, the
// reason logged and counted) the topic's start. resumed says which.
func (p *Processor) resumeFrom(ctx context.Context, adm *kadm.Client, t *table, topicID string, ends, starts kadm.ListedOffsets) (from map[int32]int64, resumed bool, err error) {
	from = map[int32]int64{}
	topic := t.node.Topic
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(topic, o.Partition); ok {
			from[o.Partition] = s.Offset
		}
	})
	if t.durable == nil || t.durable.Checkpoint() == nil {
		return from, false, nil
	}
	var ck tableCheckpoint
	why := ""
	if err := json.Unmarshal(t.durable.Checkpoint(), &ck); err != nil {
		why = fmt.Sprintf("its checkpoint is unreadable (%v)", err)
	} else {
		why = p.checkpointFits(ctx, adm, t, ck, topicID, ends, starts)
	}
	if why == "" {
		return ck.Next, true, nil
	}
	p.rebuilt(t, why)
	if err := t.durable.Wipe(); err != nil {
		return nil, false, fmt.Errorf("table %q: %w", t.node.Name, err)
	}
	return from, false, nil
}

// checkpointFits says why ck cannot be resumed from ("" when it can):
// the topic was recreated or repartitioned, a partition's log start
// moved past it (records deleted) or its end is before it (truncated),
// or records were written since and it is older than the topic's
// delete.retention.ms (a tombstone among them may be compacted away).
func (p *Processor) checkpointFits(ctx context.Context, adm *kadm.Client, t *table, ck tableCheckpoint, topicID string, ends, starts kadm.ListedOffsets) string {
	topic := t.node.Topic
	if ck.TopicID != topicID {
		return fmt.Sprintf("the topic %q was recreated (topic ID %s, the checkpoint's %s)", topic, topicID, ck.TopicID)
	}
	if n := len(ends[topic]); n != ck.Partitions || len(ck.Next) != n {
		return fmt.Sprintf("the topic %q has %d partitions, the checkpoint %d", topic, n, ck.Partitions)
	}
	written := false
	for part, end := range ends[topic] {
		next, ok := ck.Next[part]
		s, _ := starts.Lookup(topic, part)
		switch {
		case !ok:
			return fmt.Sprintf("the checkpoint has no offset of partition %d", part)
		case next < s.Offset:
			return fmt.Sprintf("the log start of partition %d (%d) is past the checkpoint (%d): records were deleted", part, s.Offset, next)
		case next > end.Offset:
			return fmt.Sprintf("the checkpoint (%d) is past the end of partition %d (%d)", next, part, end.Offset)
		}
		written = written || next < end.Offset
	}
	if !written {
		return ""
	}
	ret := p.deleteRetention(ctx, adm, topic)
	if age := time.Since(time.UnixMilli(ck.At)); age >= ret {
		return fmt.Sprintf("records were written since a checkpoint %s old, older than the topic's delete.retention.ms (%s)", age.Round(time.Second), ret)
	}
	return ""
}

// deleteRetention is the topic's delete.retention.ms (Kafka's default
// when it cannot be read).
func (p *Processor) deleteRetention(ctx context.Context, adm *kadm.Client, topic string) time.Duration {
	const kafkaDefault = 24 * time.Hour
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
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

// commitTable commits a pebble table's rows applied so far with the
// offsets read (next); caughtUp is a time at which every record past
// them was still to be written (zero: not known, the last one kept).
// A failed commit is logged once: the table keeps answering from
// memory, and the store keeps its last checkpoint.
func (p *Processor) commitTable(t *table, next map[int32]int64, caughtUp time.Time) {
	if t.durable == nil || t.storeFailed {
		return
	}
	if !caughtUp.IsZero() {
		t.ck.At = caughtUp.Add(-caughtUpMargin).UnixMilli()
	}
	t.ck.Next = next
	b, err := json.Marshal(t.ck)
	if err == nil {
		err = t.durable.Commit(b)
	}
	if err != nil {
		t.storeFailed = true
		p.log.Error("lookup table store: cannot commit; the table keeps following in memory, a restart reads from the last checkpoint", "table", t.node.Name, "err", err)
	}
}
