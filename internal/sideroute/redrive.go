package sideroute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/expr-lang/expr/vm"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// Outcomes of one side record in a redrive.
const (
	OutcomeRedriven        = "redriven"         // written (or, in a dry run, would be)
	OutcomeAlreadyRedriven = "already_redriven" // its origin is in the ledger: refused
	OutcomeFilteredOut     = "filtered_out"     // --filter was false
	OutcomeTruncated       = "truncated"        // the router cut it: redriving would inject a prefix
	OutcomeTooMany         = "too_many_redrives"
	OutcomeExprError       = "expression_error" // --filter or --transform failed on it
)

// Redrive says what to redrive where.
type Redrive struct {
	Brokers []string
	// ClientOpts are added to every client (TLS, SASL).
	ClientOpts []kgo.Opt
	// ReadOpts are added, after ClientOpts, to the clients that read the
	// side route and the ledger (the topology's client section:
	// kclient.ConsumerOpts, its fetch bounds).
	ReadOpts []kgo.Opt
	// ProduceOpts are added, after ClientOpts, to the transactional
	// producer (the topology's client section: kclient.ProducerOpts, its
	// compression and metadata minimum age among them), so the redriven
	// records are written as the router writes its own.
	ProduceOpts []kgo.Opt
	Topology    *plan.Plan
	From        Target
	To          string
	// Filter selects records (nil: all); Transform computes the new value
	// (nil: the original bytes).
	Filter, Transform *config.Expr
	DryRun            bool
	// Limit stops after this many records are redriven (0: no limit).
	Limit int
	// MaxRedrives refuses records already redriven this many times, so a
	// record the fix did not fix cannot loop for ever (0: no limit).
	MaxRedrives int
	// TxnRecords is how many records one transaction carries (default 500).
	TxnRecords int
	// TxnTimeout is the broker-side transaction timeout (default 10s).
	TxnTimeout time.Duration
	// RunID names this run in the redrive headers and the ledger.
	RunID string
	// OnRecord, when set, sees every decision: the side record, the record
	// written (nil unless redriven) and the outcome.
	OnRecord func(from, out *kgo.Record, outcome, detail string)
}

// Counts are a redrive's results.
type Counts struct {
	Read            int    `json:"read"`
	Redriven        int    `json:"redriven"`
	AlreadyRedriven int    `json:"already_redriven"`
	FilteredOut     int    `json:"filtered_out"`
	Truncated       int    `json:"refused_truncated"`
	TooMany         int    `json:"refused_too_many_redrives"`
	ExprErrors      int    `json:"expression_errors"`
	Transactions    int    `json:"transactions"`
	DryRun          bool   `json:"dry_run"`
	From            string `json:"from"`
	To              string `json:"to"`
	Ledger          string `json:"ledger"`
	Run             string `json:"run"`
}

// LedgerTopic is the compacted topic that records, per application, every
// side record ever redriven (key: its origin, topic/partition/offset).
// Each entry is written in the same transaction as the record it
// describes, so the ledger and the target topic never disagree.
func LedgerTopic(appID string) string { return appID + "-redrive-ledger" }

// TransactionalID is the redrive's transactional id for one side route:
// a second redrive of the same route fences the first, and a restarted
// redrive aborts what a killed one left open.
func TransactionalID(appID, from string) string { return appID + "-redrive-" + from }

// Origin names a record of a topic: topic/partition/offset.
func Origin(r *kgo.Record) string {
	return r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
}

var errLimit = errors.New("limit reached")

// Run redrives: it reads the side route's topic read_committed from the
// beginning to the committed end it has at the start, skips every record
// whose origin is in the ledger, and writes the others to the target in
// transactions that also carry their ledger entries. A killed run leaves
// an open transaction that the next run (same transactional id) aborts:
// each record reaches the target exactly once for a read_committed reader.
func (o Redrive) Run(ctx context.Context) (Counts, error) {
	appID := o.Topology.Settings.ApplicationID
	run := &redriveRun{o: &o, c: Counts{DryRun: o.DryRun, From: o.From.Topic, To: o.To, Ledger: LedgerTopic(appID), Run: o.RunID}, at: time.Now().UnixMilli()}
	if o.TxnRecords <= 0 {
		o.TxnRecords = 500
	}
	if o.TxnTimeout <= 0 {
		o.TxnTimeout = 10 * time.Second
	}
	if err := run.open(ctx); err != nil {
		return run.c, err
	}
	if run.cl != nil {
		defer run.cl.Close()
	}
	var err error
	if run.redriven, err = o.readLedger(ctx, run.c.Ledger, !o.DryRun); err != nil {
		return run.c, err
	}
	err = Read(ctx, o.readOptions(o.From.Topic), func(r *kgo.Record) error { return run.decide(ctx, r) })
	if errors.Is(err, ErrNoTopic) {
		return run.c, fmt.Errorf("route %s: topic %s does not exist yet (the router creates it when it starts)", o.From.Name, o.From.Topic)
	}
	if err != nil && !errors.Is(err, errLimit) {
		if !o.DryRun {
			_ = run.end(ctx, false)
		}
		run.c.Redriven = run.committed // the open transaction was aborted
		return run.c, err
	}
	if !o.DryRun {
		if err := run.end(ctx, true); err != nil {
			return run.c, err
		}
	}
	return run.c, nil
}

// redriveRun is one Run's state: the transactional client, the ledger as
// read, the open transaction and the counts.
type redriveRun struct {
	o         *Redrive
	c         Counts
	cl        *kgo.Client // nil on a dry run
	redriven  *ledger
	at        int64 // ms: the time every entry of this run records
	inTxn     bool
	perr      error
	inBatch   int
	committed int // records redriven in committed transactions
}

// open checks the target and, unless dry, makes sure the ledger exists
// and starts the transactional producer, which fences a previous run.
func (run *redriveRun) open(ctx context.Context) error {
	o := run.o
	appID := o.Topology.Settings.ApplicationID
	if o.To == o.From.Topic {
		return fmt.Errorf("--to %s is the topic of route %s itself: a redrive must write elsewhere", o.To, o.From.Name)
	}
	if _, _, err := bounds(ctx, o.Brokers, o.ClientOpts, o.To); err != nil {
		if errors.Is(err, ErrNoTopic) {
			return fmt.Errorf("--to %s: the topic does not exist (redrive never creates its target)", o.To)
		}
		return err
	}
	if o.DryRun {
		return nil
	}
	if err := o.ensureLedger(ctx, run.c.Ledger); err != nil {
		return err
	}
	cl, err := kgo.NewClient(o.producerOpts()...)
	if err != nil {
		return err
	}
	run.cl = cl
	// Initialising the producer id fences a previous run with the same
	// transactional id and aborts its open transaction.
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("init transactional producer %s: %w", TransactionalID(appID, o.From.Name), err)
	}
	return nil
}

// producerOpts are the options of the transactional producer.
func (o *Redrive) producerOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(o.Brokers...),
		kgo.TransactionalID(TransactionalID(o.Topology.Settings.ApplicationID, o.From.Name)),
		kgo.TransactionTimeout(o.TxnTimeout),
		kgo.ProducerBatchMaxBytes(int32(max(o.Topology.Dirty.MaxRecordBytes+4096, 1<<20))),
	}
	opts = append(opts, o.ClientOpts...)
	return append(opts, o.ProduceOpts...)
}

// readOptions are how a redrive reads a topic (the side route, the
// ledger): all of it, with the reading clients' options.
func (o Redrive) readOptions(topic string) ReadOptions {
	return ReadOptions{Brokers: o.Brokers, ClientOpts: o.ClientOpts, FetchOpts: o.ReadOpts, Topic: topic, FromBeginning: true}
}

func (run *redriveRun) promise(_ *kgo.Record, err error) {
	if err != nil && run.perr == nil {
		run.perr = err
	}
}

// end ends the open transaction: committed when commit and every record
// was written, else aborted.
func (run *redriveRun) end(ctx context.Context, commit bool) error {
	if !run.inTxn {
		return nil
	}
	batch := run.inBatch
	run.inTxn, run.inBatch = false, 0
	ectx := context.WithoutCancel(ctx)
	ferr := run.cl.Flush(ectx)
	how := kgo.TryCommit
	if ferr != nil || run.perr != nil || !commit {
		how = kgo.TryAbort
	}
	if err := run.cl.EndTransaction(ectx, how); err != nil {
		return fmt.Errorf("end transaction: %w", err)
	}
	switch {
	case ferr != nil:
		return fmt.Errorf("flush: %w", ferr)
	case run.perr != nil:
		return fmt.Errorf("produce: %w", run.perr)
	}
	if commit {
		run.c.Transactions++
		run.committed += batch
	}
	return nil
}

// decide plans one side record and, unless dry, writes it and its ledger
// entry in the open transaction.
func (run *redriveRun) decide(ctx context.Context, r *kgo.Record) error {
	o, c := run.o, &run.c
	c.Read++
	origin := Origin(r)
	out, outcome, detail := o.plan(r, run.redriven, run.at)
	if o.OnRecord != nil {
		o.OnRecord(r, out, outcome, detail)
	}
	c.count(outcome)
	if outcome != OutcomeRedriven {
		return nil
	}
	entry := ledgerEntry{Run: o.RunID, To: o.To, At: run.at}
	run.redriven.set(origin, entry)
	if !o.DryRun {
		if !run.inTxn {
			if err := run.cl.BeginTransaction(); err != nil {
				return fmt.Errorf("begin transaction: %w", err)
			}
			run.inTxn = true
		}
		ev, _ := json.Marshal(entry)
		run.cl.Produce(ctx, out, run.promise)
		run.cl.Produce(ctx, &kgo.Record{Topic: c.Ledger, Key: []byte(origin), Value: ev}, run.promise)
		run.inBatch++
		if run.inBatch >= o.TxnRecords {
			if err := run.end(ctx, true); err != nil {
				return err
			}
		}
	}
	if o.Limit > 0 && c.Redriven >= o.Limit {
		return errLimit
	}
	return nil
}

// count adds one record's outcome.
func (c *Counts) count(outcome string) {
	switch outcome {
	case OutcomeRedriven:
		c.Redriven++
	case OutcomeAlreadyRedriven:
		c.AlreadyRedriven++
	case OutcomeTruncated:
		c.Truncated++
	case OutcomeTooMany:
		c.TooMany++
	case OutcomeExprError:
		c.ExprErrors++
	case OutcomeFilteredOut:
		c.FilteredOut++
	}
}

// plan decides what becomes of one side record: the record to write and
// OutcomeRedriven, or no record and why not. It is pure (no I/O): the
// same record, ledger and time always give the same answer.
func (o Redrive) plan(r *kgo.Record, redriven *ledger, at int64) (*kgo.Record, string, string) {
	origin := Origin(r)
	rs := wire.Decode(r.Headers)
	if e, ok := redriven.get(origin); ok {
		return nil, OutcomeAlreadyRedriven, "already redriven by run " + e.Run + " to " + e.To
	}
	if rs.TruncatedFrom > 0 {
		return nil, OutcomeTruncated, fmt.Sprintf("the router kept %d of %d bytes", len(r.Key)+len(r.Value), rs.TruncatedFrom)
	}
	if o.MaxRedrives > 0 && rs.RedriveCount >= int64(o.MaxRedrives) {
		return nil, OutcomeTooMany, fmt.Sprintf("redriven %d times already (--max-redrives %d)", rs.RedriveCount, o.MaxRedrives)
	}
	env := o.env(r, rs)
	var machine vm.VM
	if o.Filter != nil {
		v, err := machine.Run(o.Filter.Program, env)
		if err != nil {
			return nil, OutcomeExprError, "--filter: " + firstLine(err.Error())
		}
		if b, _ := v.(bool); !b {
			return nil, OutcomeFilteredOut, ""
		}
	}
	value := r.Value
	if o.Transform != nil {
		v, err := machine.Run(o.Transform.Program, env)
		if err == nil {
			value, err = valueBytes(v)
		}
		if err != nil {
			return nil, OutcomeExprError, "--transform: " + firstLine(err.Error())
		}
	}
	ts := r.Timestamp
	if rs.SourceTimestamp != nil {
		ts = time.UnixMilli(*rs.SourceTimestamp)
	}
	reason := rs.Code()
	hs := append(wire.UserHeaders(r.Headers),
		kgo.RecordHeader{Key: wire.HeaderRedriveOrigin, Value: []byte(origin)},
		kgo.RecordHeader{Key: wire.HeaderRedriveRun, Value: []byte(o.RunID)},
		kgo.RecordHeader{Key: wire.HeaderRedriveReason, Value: []byte(reason)},
		kgo.RecordHeader{Key: wire.HeaderRedriveCount, Value: []byte(strconv.FormatInt(rs.RedriveCount+1, 10))},
		kgo.RecordHeader{Key: wire.HeaderRedriveAt, Value: []byte(strconv.FormatInt(at, 10))},
	)
	return &kgo.Record{Topic: o.To, Key: r.Key, Value: value, Headers: hs, Timestamp: ts}, OutcomeRedriven, reason
}

type ledgerEntry struct {
	Run string `json:"run"`
	To  string `json:"to"`
	At  int64  `json:"at"`
}

// ensureLedger creates the compacted ledger topic when it is missing.
func (o Redrive) ensureLedger(ctx context.Context, topic string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(o.Brokers...)}, o.ClientOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	compact := "compact"
	rf := o.Topology.Settings.Topics.ReplicationFactor
	res, err := adm.CreateTopic(ctx, 1, rf, map[string]*string{"cleanup.policy": &compact}, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create ledger topic %s: %w", topic, err)
	}
	return nil
}

// readLedger reads every committed ledger entry. With wait it first waits
// until no transaction is open on the ledger (a killed run's transaction
// is aborted when this run's producer id is initialised), so the ledger
// read is complete.
func (o Redrive) readLedger(ctx context.Context, topic string, wait bool) (*ledger, error) {
	out := newLedger()
	if wait {
		deadline := time.Now().Add(o.TxnTimeout + 30*time.Second)
		for {
			_, lso, err := bounds(ctx, o.Brokers, o.ClientOpts, topic)
			var hwm map[int32]int64
			if err == nil {
				hwm, err = o.highWatermarks(ctx, topic)
			}
			if err == nil && equalOffsets(lso, hwm) {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("ledger %s: a transaction stays open (another redrive of this route running?): %v", topic, err)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	err := Read(ctx, o.readOptions(topic), func(r *kgo.Record) error {
		if r.Value == nil {
			out.del(string(r.Key))
			return nil
		}
		var e ledgerEntry
		_ = json.Unmarshal(r.Value, &e)
		out.set(string(r.Key), e)
		return nil
	})
	if errors.Is(err, ErrNoTopic) && o.DryRun {
		return out, nil // nothing was ever redriven
	}
	return out, err
}

func (o Redrive) highWatermarks(ctx context.Context, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(o.Brokers...)}, o.ClientOpts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	lo.Each(func(l kadm.ListedOffset) { out[l.Partition] = l.Offset })
	return out, nil
}

func equalOffsets(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for p, o := range a {
		if b[p] != o {
			return false
		}
	}
	return true
}

// env is what --filter and --transform see: the value's top-level JSON
// fields (when it is a JSON object), the topology's metadata variables for
// the side record, and _value (the decoded value), _raw (the value as a
// string), _reason, _stage and _error (its reason headers).
func (o Redrive) env(r *kgo.Record, rs wire.Reasons) map[string]any {
	e := map[string]any{}
	var val any
	if len(r.Value) > 0 {
		d := json.NewDecoder(bytes.NewReader(r.Value))
		d.UseNumber()
		if err := d.Decode(&val); err == nil && !d.More() {
			val = exact(val)
			if m, ok := val.(map[string]any); ok {
				for k, v := range m {
					e[k] = v
				}
			}
		} else {
			val = nil
		}
	}
	hs := make(map[string]string, len(r.Headers))
	for _, h := range r.Headers {
		hs[h.Key] = string(h.Value)
	}
	et, _ := EventTime(o.Topology, r)
	e[config.MetaKey] = string(r.Key)
	e[config.MetaTopic] = r.Topic
	e[config.MetaPartition] = int(r.Partition)
	e[config.MetaOffset] = int(r.Offset)
	e[config.MetaTimestamp] = int(r.Timestamp.UnixMilli())
	e[config.MetaEventTime] = int(et)
	e[config.MetaHeaders] = hs
	e["_value"] = val
	e["_raw"] = string(r.Value)
	e["_reason"] = rs.Code()
	e["_stage"] = rs.Stage
	e["_error"] = rs.Error
	return e
}

// exact turns json.Numbers into int when they are integers that fit, else
// float64, like the router's decoder.
func exact(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return int(i)
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return string(t)
	case map[string]any:
		for k, x := range t {
			t[k] = exact(x)
		}
	case []any:
		for i, x := range t {
			t[i] = exact(x)
		}
	}
	return v
}

// valueBytes is the record value a --transform result becomes: a string
// or bytes as they are, anything else (object, list, number) as JSON.
func valueBytes(v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return nil, errors.New("the transform gave nil; give a string, an object or a list")
	case string:
		return []byte(t), nil
	case []byte:
		return t, nil
	}
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		return nil, fmt.Errorf("the transform's result cannot be written as JSON: %w", err)
	}
	return b, nil
}

func firstLine(s string) string {
	if i := bytes.IndexAny([]byte(s), "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// jsonable turns the maps expr-lang builds with any keys (fromPairs) into
// maps with string keys, which encoding/json can write.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = jsonable(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = jsonable(x)
		}
		return l
	}
	return v
}
