package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/lookup"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/statelimit"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/registry"
)

// table is one loaded lookup table: its store and how its rows are read.
type table struct {
	node  *plan.TableNode
	store *lookup.Table
	m     *metrics.TableMetrics
	// dec decodes the rows of a registry format (nil: json).
	dec *registry.Decoder
	log *slog.Logger
}

// Tables are the process's lookup tables by name, what lookup() reads
// (plan.BindTables) and GET /tables/{name}/{key} serves.
type Tables struct {
	byName map[string]*table
}

// Get is the current row of key in table name (as of now, for as_of
// tables: the latest version); ok is false for an unknown table.
func (ts *Tables) Get(name, key string) (row map[string]any, found, ok bool) {
	t := ts.byName[name]
	if t == nil {
		return nil, false, false
	}
	r, res := t.store.Get(key, time.Now().UnixMilli())
	return r, res != lookup.Miss, true
}

// lookup is lookup() of the compiled expressions; tooOld: the answer is
// the oldest version kept of a record older than the history
// (on_too_old: oldest), which stage one marks on the record's outputs.
func (ts *Tables) lookup(name string, key any, at int64) (row any, tooOld bool, err error) {
	t := ts.byName[name]
	if t == nil {
		return nil, false, fmt.Errorf("lookup: no table %q", name)
	}
	k, ok := lookup.KeyString(key)
	if !ok {
		t.m.Lookups.WithLabelValues(name, metrics.LookupMiss).Inc()
		return nil, false, nil
	}
	r, res := t.store.Get(k, at)
	switch res {
	case lookup.Miss:
		t.m.Lookups.WithLabelValues(name, metrics.LookupMiss).Inc()
		return nil, false, nil
	case lookup.TooOld:
		t.m.Lookups.WithLabelValues(name, metrics.LookupTooOld).Inc()
		if t.node.OnTooOld == plan.TooOldDirty {
			return nil, false, fmt.Errorf("lookup(%q, %q): event time %d is before the table's history", name, k, at)
		}
		return r, true, nil
	}
	t.m.Lookups.WithLabelValues(name, metrics.LookupHit).Inc()
	return r, false, nil
}

// newTables builds the empty tables of a plan; decs are the decoders of
// the registry-format tables, by name.
func newTables(top *plan.Plan, m *metrics.TableMetrics, decs map[string]*registry.Decoder, log *slog.Logger) (*Tables, error) {
	ts := &Tables{byName: map[string]*table{}}
	for _, n := range top.Tables {
		spec := lookup.Spec{Mode: lookup.Current, History: n.History,
			Limits: statelimit.Limits{MaxEntries: n.MaxEntries, MaxBytes: n.MaxBytes}}
		if n.MaxEntries > 0 || n.MaxBytes > 0 {
			spec.Limits.Policy = statelimit.Route
		}
		if n.Mode == plan.TableAsOf {
			spec.Mode = lookup.AsOf
		}
		st, err := lookup.New(spec)
		if err != nil {
			return nil, fmt.Errorf("table %q: %w", n.Name, err)
		}
		m.Preset(n.Name)
		ts.byName[n.Name] = &table{node: n, store: st, m: m, dec: decs[n.Name], log: log}
	}
	return ts, nil
}

// apply applies one record of the table's topic: a row (json, or a
// registry format), or a tombstone (null value) deleting the record
// key's row. A row that does not decode (for a registry format: no magic
// byte, a schema id the registry does not have, a payload its schema does
// not read), or lacks its key or time field, is counted and skipped: the
// key keeps the row it had. Only ctx's end leaves a row unapplied
// uncounted.
func (t *table) apply(ctx context.Context, r *kgo.Record) {
	if r.Attrs.IsControl() {
		return
	}
	name := t.node.Name
	at := r.Timestamp.UnixMilli()
	if r.Value == nil {
		t.admit(t.store.Apply(string(r.Key), at, nil, 0))
		return
	}
	row, err := t.decode(ctx, r.Value)
	if err != nil {
		if ctx.Err() == nil {
			t.m.Undecodable.WithLabelValues(name).Inc()
		}
		return
	}
	key := string(r.Key)
	if t.node.Key != "" {
		k, ok := lookup.KeyString(row.fields[t.node.Key])
		if !ok {
			t.m.Undecodable.WithLabelValues(name).Inc()
			return
		}
		key = k
	}
	if t.node.Mode == plan.TableAsOf && t.node.Time != "" {
		ms, ok := row.versionTime(t.node.Time)
		if !ok {
			t.m.Undecodable.WithLabelValues(name).Inc()
			return
		}
		at = ms
	}
	t.admit(t.store.Apply(key, at, row.fields, len(r.Value)))
}

func (t *table) admit(ok bool) {
	if !ok {
		t.m.Refused.WithLabelValues(t.node.Name).Inc()
	}
	n, b := t.store.Size()
	t.m.Rows.WithLabelValues(t.node.Name).Set(float64(n))
	t.m.Bytes.WithLabelValues(t.node.Name).Set(float64(b))
}

// epochMillis is a time field's epoch milliseconds: an integer.
func epochMillis(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// loadTables reads every table's topic from its start to the end listed
// when it begins (readiness says how far it is), binds lookup() to the
// tables, and returns the function that follows the topics afterwards
// until ctx ends. Without tables it does nothing.
func (p *Processor) loadTables(ctx context.Context, adm *kadm.Client) (follow func(), err error) {
	if len(p.top.Tables) == 0 {
		return func() {}, nil
	}
	decs, err := kclient.TableDecoders(p.top, p.m.SchemaRegistry)
	if err != nil {
		return nil, err
	}
	ts, err := newTables(p.top, p.m.Tables, decs, p.log)
	if err != nil {
		return nil, err
	}
	var followers []func()
	for _, n := range p.top.Tables {
		f, err := p.loadTable(ctx, adm, ts.byName[n.Name])
		if err != nil {
			return nil, err
		}
		followers = append(followers, f)
	}
	p.top.BindTables(ts.lookup)
	p.tables.Store(ts)
	return func() {
		for _, f := range followers {
			go f()
		}
	}, nil
}

// loadTable reads one table to the end listed at its start, then returns
// the follower of its later rows (which closes the client).
func (p *Processor) loadTable(ctx context.Context, adm *kadm.Client, t *table) (func(), error) {
	name, topic := t.node.Name, t.node.Topic
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("table %q: the end offsets of %q: %w", name, topic, err)
	}
	if err := ends.Error(); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("table %q: the end offsets of %q: %w", name, topic, err)
	}
	if err := ends.Error(); err != nil || len(ends[topic]) == 0 {
		return nil, fmt.Errorf("table %q: its topic %q does not exist (a table's topic is never created)", name, topic)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("table %q: the start offsets of %q: %w", name, topic, err)
	}
	// A partition whose records were all deleted has nothing to read:
	// waiting for its end would never end.
	want := map[int32]int64{}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		if s, ok := starts.Lookup(topic, o.Partition); !ok || o.Offset > s.Offset {
			want[o.Partition] = o.Offset
			total += o.Offset - s.Offset
		}
	})
	opts := append(append([]kgo.Opt{}, p.opts.kgoOpts...), kgo.SeedBrokers(p.top.Settings.Brokers...),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// The markers of a transactional writer come back as records, so
		// a load sees its position pass a marker at the topic's end.
		kgo.KeepControlRecords())
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("table %q: client: %w", name, err)
	}
	start := time.Now()
	next := map[int32]int64{}
	read := int64(0)
	done := func() bool {
		for part, end := range want {
			if next[part] < end {
				return false
			}
		}
		return true
	}
	p.log.Info("loading a lookup table", "table", name, "topic", topic, "records_to_end", total)
	for !done() {
		p.obs.NotReady(fmt.Sprintf("loading table %q: %d of about %d records read", name, read, total))
		t.m.Lag.WithLabelValues(name).Set(float64(max(total-read, 0)))
		// A poll that ctx ended holds no records; a row may also have
		// waited for the registry until ctx ended: checked after both.
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			t.apply(ctx, r)
			read++
			next[r.Partition] = r.Offset + 1
		})
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			// Past a transaction marker or aborted records the high
			// watermark moves without a record to show for it.
			if fp.HighWatermark > 0 && fp.Err == nil && len(fp.Records) == 0 && fp.LastStableOffset >= want[fp.Partition] {
				next[fp.Partition] = max(next[fp.Partition], want[fp.Partition])
			}
		})
		if ctx.Err() != nil {
			cl.Close()
			return nil, ctx.Err()
		}
	}
	t.m.LoadSeconds.WithLabelValues(name).Set(time.Since(start).Seconds())
	t.m.Loaded.WithLabelValues(name).Set(1)
	t.m.Lag.WithLabelValues(name).Set(0)
	p.log.Info("lookup table loaded", "table", name, "records", read, "seconds", time.Since(start).Seconds())
	return func() { p.followTable(ctx, cl, t) }, nil
}

// followTable applies the rows written after the load until ctx ends.
func (p *Processor) followTable(ctx context.Context, cl *kgo.Client, t *table) {
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachRecord(func(r *kgo.Record) { t.apply(ctx, r) })
		var lag int64
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if n := len(fp.Records); n > 0 {
				lag += max(fp.HighWatermark-fp.Records[n-1].Offset-1, 0)
			}
		})
		t.m.Lag.WithLabelValues(t.node.Name).Set(float64(lag))
	}
}

// Tables are the loaded lookup tables (nil before the load, or without
// tables): what GET /tables/{name}/{key} reads.
func (p *Processor) Tables() *Tables { return p.tables.Load() }

// TableRow is GET /tables/{name}/{key}: key's row as of now.
func (p *Processor) TableRow(name, key string) (row any, found, known, loaded bool) {
	if p.top.Table(name) == nil {
		return nil, false, false, false
	}
	ts := p.tables.Load()
	if ts == nil {
		return nil, false, true, false
	}
	r, found, _ := ts.Get(name, key)
	return r, found, true, true
}
