package sideroute

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// ErrNoTopic is returned (wrapped) when a topic does not exist.
var ErrNoTopic = errors.New("topic does not exist")

// ReadOptions say what Read reads.
type ReadOptions struct {
	Brokers []string
	// ClientOpts are added to every client (TLS, SASL).
	ClientOpts []kgo.Opt
	// FetchOpts are added, after ClientOpts, to the client that reads
	// the records, not to the one that lists the partitions' bounds
	// (the client section's fetch bounds: kclient.ConsumerOpts).
	FetchOpts []kgo.Opt
	Topic     string
	// FromBeginning reads each partition from its first record. Otherwise
	// the Last records of the topic are read, in total across its
	// partitions: the last committed ones by timestamp.
	FromBeginning bool
	Last          int
	// Follow keeps reading new records until ctx ends; without it Read
	// stops at the committed end each partition had when it started.
	Follow bool
}

// Read calls fn for every committed record of the topic (read_committed:
// records of open or aborted transactions are never seen), in offset order
// within a partition. With Last, the last Last records of the topic (by
// timestamp, then partition and offset) come in that order once every
// partition is read to its end, then (Follow) new records as they come. fn's error stops Read and is
// returned.
func Read(ctx context.Context, o ReadOptions, fn func(*kgo.Record) error) error {
	starts, ends, err := bounds(ctx, o.Brokers, o.ClientOpts, o.Topic)
	if err != nil {
		return err
	}
	rd := &reader{o: o, fn: fn, ends: ends, done: map[int32]bool{}, backlog: map[int32][]*kgo.Record{}}
	offsets := rd.startOffsets(starts)
	if len(offsets) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(o.readerOpts(offsets)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if rd.pending == 0 {
		if err := rd.flush(); err != nil {
			return err
		}
	}
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			if o.Follow {
				return nil
			}
			return fmt.Errorf("read %s: %w", o.Topic, ctx.Err())
		}
		for _, fe := range fs.Errors() {
			return fmt.Errorf("read %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		var ferr error
		fs.EachRecord(func(r *kgo.Record) {
			if ferr == nil {
				ferr = rd.record(r)
			}
		})
		if ferr != nil {
			return ferr
		}
		if rd.pending == 0 && !o.Follow {
			return nil
		}
	}
}

// reader is one Read: the partitions still short of their end, and with
// Last the records held back until every partition reached its end.
type reader struct {
	o       ReadOptions
	fn      func(*kgo.Record) error
	ends    map[int32]int64
	done    map[int32]bool
	pending int                     // partitions not yet read to their end
	backlog map[int32][]*kgo.Record // until every partition reaches its end
	later   []*kgo.Record           // records past the end, read meanwhile
}

// startOffsets: where each partition's read starts (a partition already
// at its end is only followed, or skipped).
func (rd *reader) startOffsets(starts map[int32]int64) map[int32]kgo.Offset {
	o := rd.o
	offsets := map[int32]kgo.Offset{}
	for p, end := range rd.ends {
		from := starts[p]
		if !o.FromBeginning {
			// Transaction markers take offsets too: look further back
			// than Last and keep the last Last data records.
			from = max(from, end-int64(o.Last)*3-8)
			if o.Last == 0 {
				from = end // only what comes next (Follow)
			}
		}
		if from >= end {
			rd.done[p] = true
			if !o.Follow {
				continue
			}
		} else {
			rd.pending++
		}
		offsets[p] = kgo.NewOffset().At(from)
	}
	return offsets
}

// record takes one fetched record (markers included, to see a partition's
// end even when its last offset is a marker).
func (rd *reader) record(r *kgo.Record) error {
	ring := !rd.o.FromBeginning
	end := rd.ends[r.Partition]
	var err error
	switch {
	case rd.pending == 0:
		if !r.Attrs.IsControl() {
			return rd.fn(r)
		}
		return nil
	case r.Offset >= end:
		if !r.Attrs.IsControl() {
			rd.later = append(rd.later, r)
		}
		return nil
	case !r.Attrs.IsControl() && !ring:
		err = rd.fn(r) // every record: no need to hold them back
	case !r.Attrs.IsControl():
		b := append(rd.backlog[r.Partition], r)
		if len(b) > rd.o.Last {
			b = b[len(b)-rd.o.Last:]
		}
		rd.backlog[r.Partition] = b
	}
	if err != nil {
		return err
	}
	if r.Offset+1 >= end && !rd.done[r.Partition] {
		rd.done[r.Partition] = true
		rd.pending--
		if rd.pending == 0 {
			return rd.flush()
		}
	}
	return nil
}

// flush hands over the last Last of the held-back records (each
// partition's last Last: the topic's last Last are among them), oldest
// first, then the ones read past the ends meanwhile.
func (rd *reader) flush() error {
	var all []*kgo.Record
	for _, b := range rd.backlog {
		all = append(all, b...)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if !a.Timestamp.Equal(b.Timestamp) {
			return a.Timestamp.Before(b.Timestamp)
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Offset < b.Offset
	})
	if len(all) > rd.o.Last {
		all = all[len(all)-rd.o.Last:]
	}
	for _, r := range all {
		if err := rd.fn(r); err != nil {
			return err
		}
	}
	for _, r := range rd.later {
		if err := rd.fn(r); err != nil {
			return err
		}
	}
	rd.backlog, rd.later = nil, nil
	return nil
}

// readerOpts are the options of Read's consuming client.
func (o ReadOptions) readerOpts(offsets map[int32]kgo.Offset) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	}
	opts = append(opts, o.ClientOpts...)
	return append(opts, o.FetchOpts...)
}

// bounds returns each partition's first offset and its committed end
// (the last stable offset: what a read_committed reader can read now).
func bounds(ctx context.Context, brokers []string, opts []kgo.Opt, topic string) (starts, ends map[int32]int64, err error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	list := func(fn func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[int32]int64, error) {
		lo, err := fn(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("list offsets of %s: %w", topic, err)
		}
		out := map[int32]int64{}
		var perr error
		lo.Each(func(o kadm.ListedOffset) {
			if o.Err != nil && perr == nil {
				perr = o.Err
			}
			out[o.Partition] = o.Offset
		})
		if errors.Is(perr, kerr.UnknownTopicOrPartition) || (perr == nil && len(out) == 0) {
			return nil, fmt.Errorf("%s: %w", topic, ErrNoTopic)
		}
		if perr != nil {
			return nil, fmt.Errorf("list offsets of %s: %w", topic, perr)
		}
		return out, nil
	}
	if starts, err = list(adm.ListStartOffsets); err != nil {
		return nil, nil, err
	}
	if ends, err = list(adm.ListCommittedOffsets); err != nil {
		return nil, nil, err
	}
	return starts, ends, nil
}

// EventTime is the record's event time, epoch ms: the router's event-time
// header when it carries one (window routes, late records; a repartition
// envelope's, wire.ExpandRepartition), else what the topology's
// event_time reads from the value, else false.
func EventTime(top *plan.Plan, r *kgo.Record) (int64, bool) {
	for _, h := range wire.ExpandRepartition(r.Headers) {
		if h.Key == wire.HeaderEventTime {
			if n, err := strconv.ParseInt(string(h.Value), 10, 64); err == nil {
				return n, true
			}
		}
	}
	et := top.EventTime
	if et.Format == config.TimeKafka || et.Field == "" {
		return r.Timestamp.UnixMilli(), !r.Timestamp.IsZero()
	}
	if !gjson.ValidBytes(r.Value) {
		return 0, false
	}
	v := gjson.GetBytes(r.Value, et.Field)
	switch et.Format {
	case config.TimeEpochMillis:
		if v.Type == gjson.Number {
			return int64(v.Num), true
		}
	case config.TimeEpochSecs:
		if v.Type == gjson.Number {
			return int64(v.Num * 1000), true
		}
	case config.TimeRFC3339:
		if t, err := time.Parse(time.RFC3339Nano, v.Str); err == nil && v.Type == gjson.String {
			return t.UnixMilli(), true
		}
	}
	return 0, false
}
