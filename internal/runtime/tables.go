package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	// hit, miss and tooOld are m.Lookups of this table, resolved once:
	// WithLabelValues hashes its labels on every call.
	hit, miss, tooOld prometheus.Counter
	// dec decodes the rows of a registry format (nil: json).
	dec *registry.Decoder
	log *slog.Logger
	// durable is the store of a pebble table (nil in memory): its
	// checkpoint ck is committed after each poll, until a commit fails.
	durable     *lookup.Durable
	ck          tableCheckpoint
	storeFailed bool
	// next and hwm are, by partition, the offset read to and the high
	// watermark last seen (the loader's, then the follower's).
	next, hwm map[int32]int64
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
		t.miss.Inc()
		return nil, false, nil
	}
	r, res := t.store.Get(k, at)
	switch res {
	case lookup.Miss:
		t.miss.Inc()
		return nil, false, nil
	case lookup.TooOld:
		t.tooOld.Inc()
		if t.node.OnTooOld == plan.TooOldDirty {
			return nil, false, fmt.Errorf("lookup(%q, %q): event time %d is before the table's history", name, k, at)
		}
		return r, true, nil
	}
	t.hit.Inc()
	return r, false, nil
}

// field is the fast forms' read of one field of a row
// (plan.TableField), counted as lookup counts: a current table's only.
// An as_of table's answer depends on the record's event time and may
// mark its outputs too old, so lookup() reads it.
func (ts *Tables) field(name string, key any, field string) (v any, found, ok bool) {
	t := ts.byName[name]
	if t == nil || t.node.Mode == plan.TableAsOf {
		return nil, false, false
	}
	var buf [32]byte
	k, ok := lookup.AppendKey(buf[:0], key)
	if !ok {
		t.miss.Inc()
		return nil, false, true
	}
	v, res := t.store.Field(k, 0, field)
	if res == lookup.Miss {
		t.miss.Inc()
		return nil, false, true
	}
	t.hit.Inc()
	return v, true, true
}

// newTables builds the tables of a plan: empty in memory, or as their
// Pebble stores hold them; decs are the decoders of the registry-format
// tables, by name.
func (p *Processor) newTables(ctx context.Context, top *plan.Plan, m *metrics.TableMetrics, decs map[string]*registry.Decoder) (*Tables, error) {
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
		m.Preset(n.Name)
		t := &table{node: n, m: m, dec: decs[n.Name], log: p.log, hit: m.Lookups.WithLabelValues(n.Name, metrics.LookupHit),
			miss: m.Lookups.WithLabelValues(n.Name, metrics.LookupMiss), tooOld: m.Lookups.WithLabelValues(n.Name, metrics.LookupTooOld)}
		var err error
		if n.Store == string(plan.StorePebble) {
			t.store, err = p.openTableStore(ctx, t, spec)
		} else {
			t.store, err = lookup.New(spec)
		}
		if err != nil {
			ts.close()
			return nil, fmt.Errorf("table %q: %w", n.Name, err)
		}
		ts.byName[n.Name] = t
	}
	return ts, nil
}

// close closes the tables' Pebble stores.
func (ts *Tables) close() {
	for _, t := range ts.byName {
		if t.durable != nil {
			_ = t.durable.Close()
		}
	}
}

// put applies a row (raw its encoding; nil with row nil, a tombstone).
func (t *table) put(key string, at int64, row lookup.Row, raw []byte) bool {
	if t.durable != nil {
		return t.durable.Apply(key, at, row, raw)
	}
	return t.store.Apply(key, at, row)
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
		t.admit(t.put(string(r.Key), at, nil, nil))
		return
	}
	if t.dec == nil && t.node.Key == "" && t.node.Mode != plan.TableAsOf {
		// A JSON row keyed by its Kafka key: encoded from its text, no
		// map built (lookup.ApplyJSON).
		ok, err := t.putJSON(string(r.Key), at, r.Value)
		if err != nil {
			t.m.Undecodable.WithLabelValues(name).Inc()
			return
		}
		t.admit(ok)
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
	t.admit(t.put(key, at, row.fields, r.Value))
}

// putJSON applies a JSON row given as its text.
func (t *table) putJSON(key string, at int64, raw []byte) (bool, error) {
	if t.durable != nil {
		return t.durable.ApplyJSON(key, at, raw)
	}
	return t.store.ApplyJSON(key, at, raw)
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

// loadTables reads every table's topic from its start (or a pebble
// table's checkpoint) to the end listed when it begins (readiness says
// how far it is), binds lookup() to the tables, and returns the function
// that starts following the topics, and the one that stops following
// (waiting for it) and closes the stores. Without tables both do nothing.
func (p *Processor) loadTables(ctx context.Context, adm *kadm.Client) (follow, stop func(), err error) {
	if len(p.top.Tables) == 0 {
		return func() {}, func() {}, nil
	}
	decs, err := kclient.TableDecoders(p.top, p.m.SchemaRegistry)
	if err != nil {
		return nil, nil, err
	}
	ts, err := p.newTables(ctx, p.top, p.m.Tables, decs)
	if err != nil {
		return nil, nil, err
	}
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var clients []*kgo.Client
	for _, n := range p.top.Tables {
		cl, err := p.loadTable(fctx, adm, ts.byName[n.Name])
		if err != nil {
			cancel()
			for _, cl := range clients {
				cl.Close()
			}
			ts.close()
			return nil, nil, err
		}
		clients = append(clients, cl)
	}
	p.top.BindTables(ts.lookup)
	p.top.BindTableFields(ts.field)
	p.tables.Store(ts)
	follow = func() {
		for i, n := range p.top.Tables {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.followTable(fctx, clients[i], ts.byName[n.Name])
			}()
		}
	}
	return follow, func() { cancel(); wg.Wait(); ts.close() }, nil
}

// tableLoad is where one table's load reads from and to.
type tableLoad struct {
	from, want map[int32]int64 // by partition; want: the end to reach
	next       map[int32]int64 // the offsets read to
	total      int64           // records to read, about
	resumed    bool            // from a pebble table's checkpoint
	listed     time.Time       // when the ends were listed
}

// planTableLoad lists the table topic's offsets and decides where the
// load starts: its start, or a pebble table's checkpoint.
func (p *Processor) planTableLoad(ctx context.Context, adm *kadm.Client, t *table) (*tableLoad, error) {
	name, topic := t.node.Name, t.node.Topic
	l := &tableLoad{want: map[int32]int64{}, listed: time.Now()}
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
	var id string
	if t.durable != nil {
		if id, err = topicID(ctx, adm, topic); err != nil {
			return nil, fmt.Errorf("table %q: %w", name, err)
		}
	}
	if l.from, l.resumed, err = p.resumeFrom(ctx, adm, t, id, ends, starts); err != nil {
		return nil, err
	}
	if !l.resumed {
		t.ck = tableCheckpoint{TopicID: id, Partitions: len(ends[topic])}
	} else {
		_ = json.Unmarshal(t.durable.Checkpoint(), &t.ck)
	}
	// A partition with nothing past where the load starts (all its
	// records deleted, or none since the checkpoint) has nothing to read:
	// waiting for its end would never end.
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > l.from[o.Partition] {
			l.want[o.Partition] = o.Offset
			l.total += o.Offset - l.from[o.Partition]
		}
	})
	return l, nil
}

// topicID is the topic's ID as text (zeros from a broker without IDs).
func topicID(ctx context.Context, adm *kadm.Client, topic string) (string, error) {
	td, err := adm.ListTopics(ctx, topic)
	if err == nil {
		err = td.Error()
	}
	if err != nil {
		return "", fmt.Errorf("describe %q: %w", topic, err)
	}
	return td[topic].ID.String(), nil
}

// loadTable reads one table to the end listed at its start, and returns
// the client that follows its later rows.
func (p *Processor) loadTable(ctx context.Context, adm *kadm.Client, t *table) (*kgo.Client, error) {
	name, topic := t.node.Name, t.node.Topic
	l, err := p.planTableLoad(ctx, adm, t)
	if err != nil {
		return nil, err
	}
	consume := kgo.ConsumeTopics(topic)
	if l.resumed {
		offs := map[int32]kgo.Offset{}
		for part, o := range l.from {
			offs[part] = kgo.NewOffset().At(o)
		}
		consume = kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs})
	}
	opts := append(append([]kgo.Opt{}, p.opts.kgoOpts...), kgo.SeedBrokers(p.top.Settings.Brokers...),
		consume, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// The markers of a transactional writer come back as records, so
		// a load sees its position pass a marker at the topic's end.
		kgo.KeepControlRecords())
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("table %q: client: %w", name, err)
	}
	start := time.Now()
	p.log.Info("loading a lookup table", "table", name, "topic", topic, "records_to_end", l.total,
		"resumed_from_checkpoint", l.resumed, "rows_restored", rows(t.store))
	read, err := p.readTable(ctx, cl, t, l)
	if err != nil {
		cl.Close()
		return nil, err
	}
	p.commitTable(t, l.next, l.listed)
	t.next, t.hwm = l.next, maps.Clone(l.next)
	t.m.LoadSeconds.WithLabelValues(name).Set(time.Since(start).Seconds())
	t.m.LoadRecords.WithLabelValues(name).Set(float64(read))
	t.m.Loaded.WithLabelValues(name).Set(1)
	t.m.Lag.WithLabelValues(name).Set(0)
	p.log.Info("lookup table loaded", "table", name, "records", read, "resumed_from_checkpoint", l.resumed,
		"seconds", time.Since(start).Seconds())
	return cl, nil
}

// readTable applies the records of l (to its ends), committing a pebble
// table after each poll; read is how many records it applied.
func (p *Processor) readTable(ctx context.Context, cl *kgo.Client, t *table, l *tableLoad) (read int64, err error) {
	name := t.node.Name
	l.next = maps.Clone(l.from)
	done := func() bool {
		for part, end := range l.want {
			if l.next[part] < end {
				return false
			}
		}
		return true
	}
	progress := fmt.Sprintf("loading table %q", name)
	if l.resumed {
		progress += fmt.Sprintf(" (resumed from its checkpoint, %d rows restored)", rows(t.store))
	}
	for !done() {
		p.obs.NotReady(fmt.Sprintf("%s: %d of about %d records read", progress, read, l.total))
		t.m.Lag.WithLabelValues(name).Set(float64(max(l.total-read, 0)))
		// A poll that ctx ended holds no records; a row may also have
		// waited for the registry until ctx ended and not been applied:
		// checked after both, before the checkpoint moves past it.
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			t.apply(ctx, r)
			read++
			l.next[r.Partition] = r.Offset + 1
		})
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			// Past a transaction marker or aborted records the high
			// watermark moves without a record to show for it.
			if fp.HighWatermark > 0 && fp.Err == nil && len(fp.Records) == 0 && fp.LastStableOffset >= l.want[fp.Partition] {
				l.next[fp.Partition] = max(l.next[fp.Partition], l.want[fp.Partition])
			}
		})
		if ctx.Err() != nil {
			return read, ctx.Err()
		}
		p.commitTable(t, l.next, time.Time{})
	}
	return read, nil
}

// followTable applies the rows written after the load until ctx ends,
// committing a pebble table after each poll.
func (p *Processor) followTable(ctx context.Context, cl *kgo.Client, t *table) {
	defer cl.Close()
	polled := time.Now()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachRecord(func(r *kgo.Record) {
			t.apply(ctx, r)
			t.next[r.Partition] = r.Offset + 1
		})
		// A row that waited for the registry until ctx ended was not
		// applied: no checkpoint past it.
		if ctx.Err() != nil {
			return
		}
		var lag int64
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if fp.Err == nil {
				t.hwm[fp.Partition] = fp.HighWatermark
			}
			if n := len(fp.Records); n > 0 {
				lag += max(fp.HighWatermark-fp.Records[n-1].Offset-1, 0)
			}
		})
		t.m.Lag.WithLabelValues(t.node.Name).Set(float64(lag))
		p.commitTable(t, t.next, t.caughtUp(polled))
		polled = time.Now()
	}
}

// caughtUp is polled when every partition is read to the high watermark
// last seen: every record past the offsets read was then written after
// the fetches were answered, after the poll before (less a margin, see
// commitTable); else zero.
func (t *table) caughtUp(polled time.Time) time.Time {
	for part, hw := range t.hwm {
		if t.next[part] < hw {
			return time.Time{}
		}
	}
	return polled
}

func rows(st *lookup.Table) int {
	n, _ := st.Size()
	return n
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
