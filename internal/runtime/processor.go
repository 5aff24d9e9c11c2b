package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/observe"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/registry"
	"github.com/sidestream/sidestream/internal/retry"
	"github.com/sidestream/sidestream/internal/stagetwo"
	"github.com/sidestream/sidestream/internal/tracing"
)

// Opt configures a Processor.
type Opt func(*opts)

type opts struct {
	log         *slog.Logger
	metrics     *metrics.Metrics
	instanceID  string
	workers     int
	maxPoll     int
	txnTimeout  time.Duration
	stallAfter  time.Duration
	staticGroup bool
	kgoOpts     []kgo.Opt
	sampler     func([]*kgo.Record)
	stores      changelog.Builder
	asmStores   changelog.Builder // assembly tasks: memory (tests inject faults)
	lossRecheck time.Duration
	ownerURL    string
	clock       func() time.Time
	tracer      *tracing.Tracer
}

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Opt { return func(o *opts) { o.log = l } }

// WithMetrics sets the metrics (default: a fresh metrics.New()).
func WithMetrics(m *metrics.Metrics) Opt { return func(o *opts) { o.metrics = m } }

// WithInstanceID names this process in its group; the transactional ID is
// application_id + "-" + instance ID, so a restarted instance with the same
// ID fences its predecessor at once. Default: the host name. Two live
// processes must never share one.
func WithInstanceID(id string) Opt { return func(o *opts) { o.instanceID = id } }

// WithWorkers sets how many partitions of one poll are processed in
// parallel (default GOMAXPROCS).
func WithWorkers(n int) Opt { return func(o *opts) { o.workers = n } }

// WithMaxPollRecords caps the records of one poll (default 10000), which
// bounds the work between two commit checks.
func WithMaxPollRecords(n int) Opt { return func(o *opts) { o.maxPoll = n } }

// WithTransactionTimeout sets the broker-side transaction timeout
// (default 10s): how long an open transaction of a dead process blocks
// read_committed readers before the broker aborts it.
func WithTransactionTimeout(d time.Duration) Opt { return func(o *opts) { o.txnTimeout = d } }

// WithStaticMembership uses the instance ID as group.instance.id, so a
// restart within the session timeout does not rebalance (default off).
func WithStaticMembership(on bool) Opt { return func(o *opts) { o.staticGroup = on } }

// WithStoreBuilder sets how window tasks open their state stores
// (default: from the topology's state section, memory unless it says
// pebble). Tests use it to put each instance's stores in its own place.
func WithStoreBuilder(b changelog.Builder) Opt { return func(o *opts) { o.stores = b } }

// WithLossRecheck sets how long a processor stopped by a changelog loss
// waits before it looks again (default 30s).
func WithLossRecheck(d time.Duration) Opt { return func(o *opts) { o.lossRecheck = d } }

// WithOwnerURL sets how a state query that lands on the wrong instance
// reaches the owner's HTTP API: {instance} and {host} in tmpl are replaced
// by the owning member's instance id and client address (see
// CheckOwnerURL). Empty: the 404 names the owner without a URL.
func WithOwnerURL(tmpl string) Opt { return func(o *opts) { o.ownerURL = tmpl } }

// WithClock sets the processing-time clock (default time.Now): the
// assembly TTL of time: processing routes, and idle_timeout's idle
// sources and quiet windows. Commit intervals, timeouts and backoffs
// keep the real clock. router test drives a virtual one.
func WithClock(now func() time.Time) Opt { return func(o *opts) { o.clock = now } }

// WithTracer makes spans of a sampled share of records (tracing.New);
// nil, the default, makes none and costs the record path nothing.
func WithTracer(t *tracing.Tracer) Opt { return func(o *opts) { o.tracer = t } }

// WithKgoOpts appends raw franz-go options (tests, a custom dialer). The
// security settings of the topology are added by New (kclient.SecurityOpts).
func WithKgoOpts(k ...kgo.Opt) Opt { return func(o *opts) { o.kgoOpts = append(o.kgoOpts, k...) } }

// Processor runs one topology as a member of its consumer group.
type Processor struct {
	top     *plan.Plan
	opts    opts
	log     *slog.Logger
	m       *metrics.Metrics
	eng     *stageOne
	obs     *observe.Observer      // readiness, /healthz and /tasks
	tables  atomic.Pointer[Tables] // the lookup tables, once loaded (nil without)
	stage   *stagetwo.Stage        // stage two: the window and assembly tasks
	src     *sourceTracker         // stage one's source progress (aligned watermarks)
	part    kgo.Partitioner        // the producer's: state queries locate keys with it
	adm     *kadm.Client           // set by Run; used by restores
	admCl   *kgo.Client            // the client under adm
	samples *sideSamples           // nil without WithSideSampler
	gaps    *gapTracker            // where each consumed partition's next record must be

	// topicMax is each output topic's max.message.bytes, read by Run
	// before the first session (readOutputLimits): the producer's batch
	// bound per topic.
	topicMax map[string]int
	// produceRetry is the backoff of the transactions aborted in a row
	// by a produce failure (the commit loop's own); a commit resets it.
	produceRetry *retry.Backoff
	// registryRetry is the backoff of the batches aborted in a row by a
	// schema registry outage; registryDown holds readiness back until a
	// commit with records (registryoutage.go), which resets it.
	registryRetry *retry.Backoff
	registryDown  bool
	// guard holds the objectives and their pause (objectives.go); nil
	// without any.
	guard *guard

	// routing is the stage one batches route with (p.eng until a reload):
	// read once per batch; the commit loop installs a reload's (nextRouting)
	// where no interval is open (reload.go). p.top stays the plan the
	// processor started with: its settings, inputs and stage two, which
	// a reload never changes.
	routing     atomic.Pointer[routing]
	nextRouting atomic.Pointer[routing]
	// started is set once Run has checked and created the topics: a
	// reload creates its new outputs with it.
	started atomic.Pointer[kadm.Client]
	// held are the held routes' repartition topics by route (held.go),
	// paused in every session's client.
	heldMu sync.Mutex
	held   map[string]string
	// resolver answers whether computed topics exist (computed.go); one
	// for every version a reload installs, so its cache outlives them.
	resolver *topicResolver
}

// New checks the options and builds a processor; it does not connect.
func New(top *plan.Plan, o ...Opt) (*Processor, error) {
	op := opts{workers: goruntime.GOMAXPROCS(0), maxPoll: 10000, txnTimeout: 10 * time.Second, stallAfter: time.Minute, lossRecheck: lossRecheck, clock: time.Now}
	for _, f := range o {
		f(&op)
	}
	if err := op.validate(top); err != nil {
		return nil, err
	}
	if op.log == nil {
		op.log = slog.Default()
	}
	if op.clock == nil {
		op.clock = time.Now
	}
	if op.metrics == nil {
		op.metrics = metrics.New()
	}
	if op.instanceID == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "sidestream"
		}
		op.instanceID = h
	}
	// The security options go first, into the options every client the
	// processor creates is built with (group, admin, restores), so no
	// client can connect without them; raw options may still override.
	sec, err := kclient.SecurityOpts(top.Settings.Security)
	if err != nil {
		return nil, err
	}
	op.kgoOpts = append(sec, op.kgoOpts...)
	if op.stores == nil {
		op.stores = changelog.MemoryBuilder()
		if st := top.Settings.State; st.Store == plan.StorePebble {
			op.stores = changelog.PebbleBuilder(st.Dir)
		}
	}
	if op.asmStores == nil {
		op.asmStores = changelog.MemoryBuilder()
	}
	p := &Processor{
		src:  newSourceTracker(),
		part: stagetwo.NewPartitioner(top),
		top:  top,
		opts: op,
		log:  op.log.With("component", "processor", "application_id", top.Settings.ApplicationID),
		m:    op.metrics,
		obs:  observe.New(top, op.metrics),
		gaps: newGapTracker(),
		held: map[string]string{},

		produceRetry:  retry.New(time.Second, maxProduceBackoff),
		registryRetry: retry.New(time.Second, maxProduceBackoff),
		guard:         newGuard(top, op.metrics.Objectives),
	}
	p.resolver = newTopicResolver(p)
	if p.eng, err = newStageOne(top, op.metrics, p.resolver); err != nil {
		return nil, err
	}
	p.stage, err = stagetwo.New(p.stageConfig())
	if err != nil {
		return nil, err
	}
	p.samples = newSideSamples(p)
	p.routing.Store(&routing{top: top, eng: p.eng})
	// Every series a dashboard or an alert reads exists from the start.
	p.m.Preset(observe.Series(top))
	return p, nil
}

// stageConfig is what stage two is built from.
func (p *Processor) stageConfig() stagetwo.Config {
	op := p.opts
	c := stagetwo.Config{Topology: p.top, Engine: p.eng.Engine, Runtime: stageRuntime{p}, Log: p.log, Metrics: p.m,
		Partitioner: p.part, Stores: op.stores, AssemblyStores: op.asmStores, OwnerURL: op.ownerURL, Clock: op.clock}
	if op.tracer != nil {
		// Never a nil *Tracer in the interface: stage two tests for nil.
		c.Tracer, c.TraceLinks = op.tracer, p.top.Settings.Tracing.LinksOrDefault()
	}
	return c
}

// validate checks the options against the topology they run: all the
// checks New makes before it builds anything.
func (op *opts) validate(top *plan.Plan) error {
	switch {
	case len(top.Settings.Brokers) == 0:
		return plan.ErrNoBrokers
	case op.workers < 1:
		return fmt.Errorf("workers must be at least 1, got %d", op.workers)
	case op.maxPoll < 1:
		return fmt.Errorf("max poll records must be at least 1, got %d", op.maxPoll)
	case op.txnTimeout < time.Second:
		return fmt.Errorf("transaction timeout must be at least 1s, got %s", op.txnTimeout)
	case op.stores == nil && top.Settings.State.Store == plan.StorePebble && top.Settings.State.Dir == "":
		return fmt.Errorf("state.store: pebble needs state.dir (or %s)", plan.EnvStateDir)
	}
	for _, n := range top.Tables {
		if n.Store == string(plan.StorePebble) && top.Settings.State.Dir == "" {
			return fmt.Errorf("table %q: store: pebble needs state.dir (or %s)", n.Name, plan.EnvStateDir)
		}
	}
	if op.ownerURL != "" {
		return stagetwo.CheckOwnerURL(op.ownerURL)
	}
	return nil
}

// Ready reports whether the processor has joined its group with a working
// producer, and why not when it has not (what /readyz answers; the
// sidestream_ready gauge says the same). Warnings (conditions that do not
// stop processing) follow the reason.
func (p *Processor) Ready() (bool, string) { return p.obs.Ready() }

// Healthy reports whether the poll loop is making progress: it has turned
// within the stall limit (or has not started yet and is still within it).
func (p *Processor) Healthy() (bool, string) { return p.obs.Healthy(p.opts.stallAfter) }

// Tasks lists the assigned partitions, sorted (what /tasks shows).
func (p *Processor) Tasks() []observe.TaskStatus { return p.obs.Tasks() }

// tp names a partition (gaps, sources, purges key their maps by it).
type tp struct {
	topic     string
	partition int32
}

// Metrics returns the processor's metrics.
func (p *Processor) Metrics() *metrics.Metrics { return p.m }

// InstanceID is this process's name in the group: its group member's
// client id (and group.instance.id under static membership).
func (p *Processor) InstanceID() string { return p.opts.instanceID }

// TransactionalID is the producer's transactional ID under exactly-once.
func (p *Processor) TransactionalID() string {
	return p.top.Settings.ApplicationID + "-" + p.opts.instanceID
}

// Run processes until ctx is cancelled, then ends the open transaction
// (or commits processed offsets), leaves the group and returns nil. A
// session that fails (broker gone, fenced producer, a commit error) is
// closed and rebuilt with backoff; Run returns an error only for problems
// a retry cannot fix (a missing input topic, a refused topic creation).
func (p *Processor) Run(ctx context.Context) error {
	p.obs.Start()
	defer p.dropState(nil) // closes the stores
	p.obs.Loop()
	adm, admCl, err := kclient.NewAdmin(p.top.Settings.Brokers, p.opts.kgoOpts...)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer admCl.Close()
	p.adm, p.admCl = adm, admCl
	if err := p.waitForBrokers(ctx, adm); err != nil {
		return nilIfDone(ctx, err)
	}
	p.obs.Loop()
	if err := p.ensureTopics(ctx, adm); err != nil {
		p.obs.NotReady(err.Error())
		return nilIfDone(ctx, err)
	}
	p.readOutputLimits(ctx, adm)
	followTables, stopTables, err := p.loadTables(ctx, adm)
	if err != nil {
		p.obs.NotReady(err.Error())
		return nilIfDone(ctx, err)
	}
	defer stopTables()
	followTables()
	if err := p.registerAvroOutputs(ctx); err != nil {
		p.obs.NotReady(err.Error())
		return nilIfDone(ctx, err)
	}
	p.started.Store(adm)
	defer p.started.Store(nil)
	purgeCtx, stopPurge := context.WithCancel(ctx)
	var purging sync.WaitGroup
	purging.Go(func() { p.purgeRepartition(purgeCtx, adm) })
	defer purging.Wait()
	defer stopPurge()
	sessions := retry.New(500*time.Millisecond, 15*time.Second)
	for {
		var err error
		sessionStart := time.Now()
		p.dropState(nil) // a new session restores state from the changelogs
		p.gaps.reset()   // and fetches its committed offsets again
		if p.top.Settings.Guarantee == plan.AtLeastOnce {
			err = p.runAtLeastOnce(ctx)
		} else {
			p.settleStranded(ctx)
			err = p.runExactlyOnce(ctx)
		}
		if ctx.Err() != nil {
			return nil
		}
		if p.obs.LastCommit().After(sessionStart) {
			sessions.Reset() // the session worked for a while: a fresh failure
		}
		if ge := (*InputGapError)(nil); errors.As(err, &ge) {
			// As a changelog loss: the records are gone, a retry
			// finds the same gap until the offsets are moved past it.
			p.obs.NotReady(ge.Error())
			p.log.Error("a consumed partition lost records before they were read; waiting, not processing", "err", err, "recheck", p.opts.lossRecheck)
			if !p.idle(ctx, p.opts.lossRecheck) {
				return nil
			}
			continue
		}
		if registry.IsRetryable(err) {
			continue // at-least-once: registryOutage waited and said why
		}
		if le := (*stagetwo.ChangelogLossError)(nil); errors.As(err, &le) {
			// Not a failure a retry heals: the process stays up, not
			// ready and healthy, and looks again now and then (the
			// changelog may be restored from elsewhere meanwhile).
			p.obs.NotReady(le.Error())
			p.log.Error("a task's changelog lost state; waiting, not processing", "err", err, "recheck", p.opts.lossRecheck)
			if !p.idle(ctx, p.opts.lossRecheck) {
				return nil
			}
			continue
		}
		p.obs.NotReady("session failed, restarting: " + kclient.WithHint(err, p.top.Settings.Security))
		backoff := sessions.Next()
		p.log.Error("session failed; rebuilding it", "err", err, "backoff", backoff)
		if !p.idle(ctx, backoff) {
			return nil
		}
	}
}

// idle waits d while keeping the loop alive for /healthz (the process is
// well, it is waiting on purpose). It returns false when ctx ends first.
func (p *Processor) idle(ctx context.Context, d time.Duration) bool {
	return retry.Wait(ctx, d, p.obs.Loop)
}

// alive runs f, a call that may block for seconds while the router
// waits on purpose, with the poll loop marked alive meanwhile.
func (p *Processor) alive(f func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(retry.TickEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.obs.Loop()
			}
		}
	}()
	f()
	close(done)
}

func nilIfDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// clientOpts are the options shared by both guarantees.
func (p *Processor) clientOpts() []kgo.Opt {
	cfg := p.top.Settings
	o := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.ApplicationID),
		// The client ID names the instance in the group's description,
		// so a state query for a key held elsewhere can name its owner.
		kgo.ClientID(p.opts.instanceID),
		kgo.ConsumeTopics(p.consumedTopics()...),
		kgo.RecordPartitioner(p.part),
		// Below the log start (records deleted before they were
		// read) the client resumes at the log start; the gap tracker
		// counts what was skipped (gaps.go).
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.AdjustFetchOffsetsFn(p.adjustFetchOffsets),
		// Inputs may themselves be transactional outputs.
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.WithLogger(kclient.NewLogger(p.opts.log)),
		kgo.WithHooks(p.m.KafkaHooks()),
		kgo.ProducerBatchMaxBytesFn(p.batchMaxBytes),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			p.obs.SetJoined(true) // called after every successful join, even with nothing new
			for t, ps := range a {
				p.obs.Assign(t, ps)
			}
			p.log.Info("partitions assigned", "partitions", a)
		}),
	}
	if p.opts.staticGroup {
		o = append(o, kgo.InstanceID(p.opts.instanceID))
	}
	if len(p.stage.DirectTopics()) > 0 && len(p.top.InputTopics()) > 1 {
		// repartition: false with several inputs: partition i of every
		// input feeds task i, so one member must hold all of them. The
		// range assignor gives every member the same partition numbers
		// of each topic of equal partition count; the default
		// cooperative-sticky balancer does not (it split them).
		o = append(o, kgo.Balancers(kgo.RangeBalancer()))
	}
	o = append(o, kclient.Opts(cfg.Client)...)
	return append(o, p.opts.kgoOpts...)
}

func (p *Processor) onRevoked(kind string) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
		p.dropState(r)
		p.gaps.forget(r)
		if kind == "lost" {
			// The session is gone (broker unreachable, session expired).
			// Empty transactions still "commit" without the broker, so
			// only the next successful join may mark the router ready.
			p.obs.SetJoined(false)
			p.obs.NotReady("consumer group session lost (broker unreachable or session expired); rejoining")
		}
		for t, ps := range r {
			p.obs.Revoke(t, ps)
		}
		p.log.Info("partitions "+kind, "partitions", r)
	}
}

// produceErr keeps the first produce failure of one commit interval.
type produceErr struct {
	err atomic.Pointer[error]
}

func (e *produceErr) set(err error) {
	e.err.CompareAndSwap(nil, &err)
}

func (e *produceErr) get() error {
	if p := e.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (e *produceErr) reset() { e.err.Store(nil) }

// processFetches runs every polled partition through the engine, in
// parallel across partitions and in order within one, handing each output
// to produce. It returns the tally of the batch and the first task error.
func (p *Processor) processFetches(ctx context.Context, fetches kgo.Fetches, produce func(*kgo.Record)) (*metrics.Tally, error) {
	start := time.Now()
	produce = p.samples.wrap(produce)
	var parts []kgo.FetchTopicPartition
	fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if len(ftp.Records) > 0 {
			parts = append(parts, ftp)
		}
	})
	total := metrics.NewTally()
	if len(parts) == 0 {
		return total, nil
	}
	eng := p.routing.Load().eng // one version per batch: swapped only between intervals
	if err := p.loadSources(ctx, parts); err != nil {
		return total, err
	}
	var taskErr error
	var taskErrOnce sync.Once
	p.eachPartition(parts, total, func(ftp kgo.FetchTopicPartition, tally *metrics.Tally) {
		if err := p.processPartition(ctx, eng, ftp, tally, produce); err != nil {
			taskErrOnce.Do(func() { taskErr = err })
		}
	})
	p.m.BatchDuration.Observe(time.Since(start).Seconds())
	return total, taskErr
}

// eachPartition calls one for every partition, on up to opts.workers
// goroutines, each with its own tally added to total at the end.
func (p *Processor) eachPartition(parts []kgo.FetchTopicPartition, total *metrics.Tally, one func(kgo.FetchTopicPartition, *metrics.Tally)) {
	if p.opts.workers == 1 || len(parts) == 1 {
		for _, ftp := range parts {
			one(ftp, total)
		}
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := atomic.Int64{}
	for range min(p.opts.workers, len(parts)) {
		wg.Go(func() {
			tally := metrics.NewTally()
			for i := next.Add(1) - 1; int(i) < len(parts); i = next.Add(1) - 1 {
				one(parts[i], tally)
			}
			mu.Lock()
			total.Add(tally)
			mu.Unlock()
		})
	}
	wg.Wait()
}

// processPartition is one polled partition: its input gap, then stage two
// of a window or an assembly route (a repartition topic) or stage one (an
// input), then its progress. A failed partition does not advance.
func (p *Processor) processPartition(ctx context.Context, eng *stageOne, ftp kgo.FetchTopicPartition, tally *metrics.Tally, produce func(*kgo.Record)) error {
	if g, ok := p.gaps.check(ftp); ok {
		if err := p.inputGap(g, tally); err != nil {
			return err
		}
	} else if p.obs.ClearGapStop(ftp.Topic, ftp.Partition) {
		p.m.InputGapStop.DeleteLabelValues(ftp.Topic, strconv.Itoa(int(ftp.Partition)))
	}
	var err error
	if p.stage.IsRepartition(ftp.Topic) {
		err = p.stage.ProcessRepartition(ctx, ftp.Topic, ftp.Partition, ftp.Records, tally, produce)
	} else {
		err = p.processInputPartition(ctx, eng, ftp, tally, produce)
	}
	if err != nil {
		return err
	}
	p.gaps.advance(ftp)
	last := ftp.Records[len(ftp.Records)-1]
	p.obs.Progress(ftp.Topic, ftp.Partition, last.Offset+1, ftp.HighWatermark)
	return nil
}

// processInputPartition is stage one for one input partition; the
// outputs of routes without a repartition topic go straight to their
// task of this partition (the direct runner).
func (p *Processor) processInputPartition(ctx context.Context, eng *stageOne, ftp kgo.FetchTopicPartition, tally *metrics.Tally, produce func(*kgo.Record)) error {
	var srcMax *int64
	if p.stage.HasWindows() {
		if sp := p.src.get(ftp.Topic, ftp.Partition); sp != nil {
			srcMax = &sp.max
		}
	}
	direct := p.stage.NewDirect(ftp.Partition, tally, produce)
	tracer := p.opts.tracer
	for _, r := range ftp.Records {
		var span tracing.Pending
		if tracer != nil {
			span = tracer.Start(r)
		}
		outs, err := eng.ProcessFrom(ctx, r, srcMax, tally)
		if err != nil {
			return err // the registry's: the batch aborts (registryAborted)
		}
		if span.Sampled() {
			tracer.End(span, r, outs)
		}
		for _, out := range outs {
			if direct != nil && direct.Owns(out.Topic) {
				direct.Process(ctx, out, r)
				continue
			}
			produce(out)
		}
	}
	if direct != nil {
		return direct.Finish(ftp.Topic, srcMax)
	}
	return nil
}

// consumedTopics are the inputs and the repartition topics of window
// routes (stage two reads what stage one wrote).
func (p *Processor) consumedTopics() []string {
	rep, _ := p.top.InternalTopics()
	return append(p.top.InputTopics(), rep...)
}

// pollErrors logs fetch errors other than the poll deadline. It returns a
// fatal error (kclient.Classify): the client is closed.
func (p *Processor) pollErrors(fetches kgo.Fetches) error {
	for _, fe := range fetches.Errors() {
		if kclient.Classify(kclient.Fetch, fe.Err) == kclient.Fatal {
			return fe.Err
		}
		if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
			continue // the poll's own deadline, or the router stopping
		}
		p.log.Warn("fetch error", "topic", fe.Topic, "partition", fe.Partition, "err", fe.Err)
	}
	return nil
}

func committedOffsets(cl *kgo.Client) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	for t, ps := range cl.CommittedOffsets() {
		out[t] = map[int32]int64{}
		for p, eo := range ps {
			out[t][p] = eo.Offset
		}
	}
	return out
}
