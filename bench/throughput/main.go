// Command throughput measures end-to-end records/s of sidestream against
// the limit set by the client and broker: a raw franz-go consume → produce
// pass-through. The broker (kfake) runs in its own process, so the
// measured process pays only for its own work, as in DESIGN.md's probe.
//
//	throughput broker --records 1000000          # prints {"ready":true,"addr":"127.0.0.1:PORT",...}
//	throughput run --mode router-eos --brokers 127.0.0.1:PORT --records 1000000
//	throughput summarize results.jsonl
//
// run prints one JSON line per run; summarize turns those lines into the
// markdown tables of docs/benchmarks.md. bench/run.sh drives a full
// session (a fresh broker per run). See bench/README.md.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/runtime"
)

// Modes: what consumes the input and produces the outputs.
const (
	PassALO   = "passthrough-alo" // franz-go consume → produce, offsets committed every 100 ms
	PassEOS   = "passthrough-eos" // the same in a GroupTransactSession, one transaction per 100 ms
	RouterALO = "router-alo"      // runtime.Run on the example topology, at_least_once
	RouterEOS = "router-eos"      // runtime.Run on the example topology, exactly_once
)

var modes = []string{PassALO, PassEOS, RouterALO, RouterEOS}

const passOutput = "passthrough.out"

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "broker":
		err = cmdBroker(os.Args[2:])
	case "run":
		err = cmdRun(os.Args[2:])
	case "summarize":
		err = cmdSummarize(os.Args[2:], os.Stdout)
	case "compare":
		err = cmdCompare(os.Args[2:])
	case "contender":
		err = cmdContender(os.Args[2:])
	case "tableload":
		err = cmdTableLoad(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "throughput:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: throughput broker|run|summarize|compare|contender|tableload [flags]  (see bench/README.md)")
	os.Exit(2)
}

// cmdBroker starts kfake on a fixed loopback port, seeds the input topic,
// preloads it with generated events and serves until SIGINT/SIGTERM.
func cmdBroker(args []string) error {
	fs := flag.NewFlagSet("broker", flag.ExitOnError)
	port := fs.Int("port", 0, "loopback port (0: a free one, printed in the ready line)")
	topic := fs.String("topic", "logs", "input topic")
	partitions := fs.Int("partitions", 6, "input partitions")
	records := fs.Int("records", 1_000_000, "records to preload")
	seed := fs.Uint64("seed", 1, "generator seed")
	keyBy := fs.String("key-by", "id", "record key of the preloaded events: id (the event id) or service (the service field, so the input is partitioned by it)")
	_ = fs.Parse(args)
	if *keyBy != "id" && *keyBy != "service" {
		return fmt.Errorf("--key-by %q: want id or service", *keyBy)
	}

	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(int32(*partitions), *topic)}
	if *port != 0 {
		opts = append(opts, kfake.Ports(*port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	defer c.Close()
	start := time.Now()
	if err := preload(c.ListenAddrs(), *topic, *records, *seed, *keyBy == "service"); err != nil {
		return err
	}
	goruntime.GC()
	line, _ := json.Marshal(map[string]any{
		"ready": true, "addr": c.ListenAddrs()[0], "topic": *topic, "partitions": *partitions,
		"records": *records, "preload_seconds": time.Since(start).Seconds(), "pid": os.Getpid(),
	})
	fmt.Println(string(line))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	return nil
}

func preload(brokers []string, topic string, n int, seed uint64, byService bool) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	g := gen.New(seed)
	var perr atomic.Pointer[error]
	for range n {
		ev := g.Next()
		key := ev.Key
		if byService {
			key = serviceKey(ev.Value)
		}
		cl.Produce(context.Background(), &kgo.Record{Key: key, Value: ev.Value}, func(_ *kgo.Record, err error) {
			if err != nil {
				perr.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		return fmt.Errorf("preload flush: %w", err)
	}
	if p := perr.Load(); p != nil {
		return fmt.Errorf("preload: %w", *p)
	}
	return nil
}

// result is one run, one JSON line.
type result struct {
	Mode       string  `json:"mode"`
	Records    int     `json:"records"`
	Seconds    float64 `json:"seconds"` // first fetched batch → every record committed
	RecordsPS  float64 `json:"records_per_s"`
	CPUSeconds float64 `json:"cpu_s"` // this process, user+system, over Seconds
	BrokerCPU  float64 `json:"broker_cpu_s,omitempty"`
	// OtherCores is the CPU the rest of the machine used meanwhile, in
	// cores (busy time of /proc/stat minus this process and the broker,
	// over Seconds): on a shared machine it says how much was left.
	OtherCores float64 `json:"other_cores"`
	LoadAvg    float64 `json:"loadavg_1m"`
	// CalibNS is how fast this machine ran a fixed piece of CPU work just
	// before the run (ns per encoding/json.Valid of a generated event, best
	// of 5): on a VM whose host is shared, CPU speed drifts in a way
	// /proc/stat does not show, and this number shows it.
	CalibNS    float64 `json:"calib_ns"`
	Total      float64 `json:"total_seconds"` // including client start and group join
	Outputs    int     `json:"outputs"`
	Verified   bool    `json:"verified"`
	GoMaxProcs int     `json:"gomaxprocs"`
	Workers    int     `json:"workers,omitempty"`
	Commits    int     `json:"commits,omitempty"`
}

// clock marks the measured window: it opens at the first fetched batch
// (after the group join), with CPU time read at both ends.
type clock struct {
	once       sync.Once
	start, end time.Time
	cpu0, bc0  float64
	cpu1, bc1  float64
	busy0      float64
	busy1      float64
	brokerPID  int
}

var _ kgo.HookFetchBatchRead = (*clock)(nil)

func (c *clock) OnFetchBatchRead(kgo.BrokerMetadata, string, int32, kgo.FetchBatchMetrics) {
	c.once.Do(func() {
		c.start = time.Now()
		c.cpu0 = cpuSeconds("self")
		c.bc0 = c.brokerCPU()
		c.busy0 = machineBusy()
	})
}

func (c *clock) brokerCPU() float64 {
	if c.brokerPID == 0 {
		return 0
	}
	return cpuSeconds(strconv.Itoa(c.brokerPID))
}

// stop closes the window: every record is committed.
func (c *clock) stop() {
	c.end = time.Now()
	c.cpu1 = cpuSeconds("self")
	c.bc1 = c.brokerCPU()
	c.busy1 = machineBusy()
}

func (c *clock) finish(r *result) {
	r.Seconds = c.end.Sub(c.start).Seconds()
	r.CPUSeconds = c.cpu1 - c.cpu0
	r.BrokerCPU = c.bc1 - c.bc0
	r.RecordsPS = float64(r.Records) / r.Seconds
	r.OtherCores = max(c.busy1-c.busy0-r.CPUSeconds-r.BrokerCPU, 0) / r.Seconds
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		r.LoadAvg, _ = strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	}
}

// machineBusy is the CPU seconds all cores spent busy since boot, from
// the first line of /proc/stat (everything but idle and iowait).
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	busy := 0.0
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i != 3 && i != 4 && i < 8 { // idle, iowait; guest time is in user already
			busy += n
		}
	}
	return busy / clkTck
}

// cpuSeconds reads utime+stime of a process from /proc/<pid>/stat.
func cpuSeconds(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64) // field 14
	st, _ := strconv.ParseFloat(f[12], 64) // field 15
	return (ut + st) / clkTck
}

// clkTck is USER_HZ, 100 on every Linux architecture Go supports.
const clkTck = 100

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	mode := fs.String("mode", RouterEOS, "one of "+strings.Join(modes, ", "))
	brokers := fs.String("brokers", "", "bootstrap brokers: the address the broker subcommand printed")
	topic := fs.String("topic", "logs", "input topic")
	records := fs.Int("records", 1_000_000, "records the input holds (the run ends when all are committed)")
	configPath := fs.String("config", "examples/logs-by-level.yaml", "topology for the router modes")
	workers := fs.Int("workers", goruntime.GOMAXPROCS(0), "router workers")
	brokerPID := fs.Int("broker-pid", 0, "pid of the broker process, to report its CPU time")
	verify := fs.Bool("verify", true, "read the outputs back read_committed and check every input appears once")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	heapProfile := fs.String("heapprofile", "", "write the heap profile of the moment the live heap was largest to this file")
	label := fs.String("label", "", "name the run in the results instead of the mode (e.g. router-eos-noschema)")
	maxPoll := fs.Int("max-poll", 0, "router: records per poll (0: the processor's default)")
	noSchema := fs.Bool("no-schema", false, "router: drop the inputs' JSON Schemas from the topology (to measure what validation costs)")
	_ = fs.Parse(args)
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *heapProfile != "" {
		stop := peakHeapProfile(*heapProfile)
		defer func() { _ = stop() }()
	}
	if !slices.Contains(modes, *mode) {
		return fmt.Errorf("unknown mode %q (modes: %s)", *mode, strings.Join(modes, ", "))
	}
	if *brokers == "" {
		return errors.New("--brokers is required: the addr of the broker subcommand's ready line")
	}
	bs := strings.Split(*brokers, ",")
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	clk := &clock{brokerPID: *brokerPID}
	res := result{Mode: *mode, Records: *records, GoMaxProcs: goruntime.GOMAXPROCS(0), CalibNS: calibrate()}
	if *label != "" {
		res.Mode = *label
	}
	begin := time.Now()
	var outTopics []string
	var err error
	switch *mode {
	case PassALO:
		outTopics = []string{passOutput}
		res.Commits, err = passAtLeastOnce(ctx, bs, *topic, *records, clk)
	case PassEOS:
		outTopics = []string{passOutput}
		res.Commits, err = passExactlyOnce(ctx, bs, *topic, *records, clk)
	default:
		g := config.AtLeastOnce
		if *mode == RouterEOS {
			g = config.ExactlyOnce
		}
		res.Workers = *workers
		outTopics, res.Commits, err = runRouter(ctx, bs, *configPath, g, *records, *workers, *maxPoll, *noSchema, clk)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", *mode, err)
	}
	clk.finish(&res)
	res.Total = time.Since(begin).Seconds()
	if *verify {
		res.Outputs, err = verifyOutputs(ctx, bs, outTopics, *records)
		if err != nil {
			return fmt.Errorf("%s: verify: %w", *mode, err)
		}
		res.Verified = true
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
	return nil
}

// calibrate times a fixed, single-threaded piece of work.
func calibrate() float64 {
	g := gen.New(42)
	g.BadFraction = 0
	evs := make([][]byte, 5000)
	for i := range evs {
		evs[i] = g.Next().Value
	}
	best := time.Duration(1 << 62)
	for range 5 {
		start := time.Now()
		for _, v := range evs {
			if !json.Valid(v) {
				panic("calibrate: generated event is not valid JSON")
			}
		}
		best = min(best, time.Since(start))
	}
	return float64(best.Nanoseconds()) / float64(len(evs))
}

func createTopic(ctx context.Context, brokers []string, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	return err
}

// passOpts are the consumer options the router uses too.
func passOpts(brokers []string, group, topic, out string, clk *clock) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DefaultProduceTopic(out),
		kgo.WithHooks(clk),
		// The router's metadata age (client.metadata_min_age): with
		// franz-go's 5 s a produce refused NOT_LEADER on an output the
		// harness had just created held the first flush up to 5 s in
		// one run and not the next (docs/benchmarks-history.md, "The 5 s stall").
		kgo.MetadataMinAge(config.DefaultMetadataMinAge),
	}
}

func copyOf(r *kgo.Record) *kgo.Record {
	return &kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
}

// passAtLeastOnce is the at-least-once loop without any processing: poll,
// produce every record as is, flush and commit offsets every 100 ms.
func passAtLeastOnce(ctx context.Context, brokers []string, topic string, n int, clk *clock) (commits int, err error) {
	if err := createTopic(ctx, brokers, passOutput, 6); err != nil {
		return 0, fmt.Errorf("create output: %w", err)
	}
	return passLoopALO(ctx, brokers, "pass-alo", topic, passOutput, n, clk)
}

// passLoopALO is passAtLeastOnce's loop on an existing output topic; n <= 0
// runs until ctx is cancelled (the compare harness's limit contender).
func passLoopALO(ctx context.Context, brokers []string, group, topic, out string, n int, clk *clock) (commits int, err error) {
	cl, err := kgo.NewClient(append(passOpts(brokers, group, topic, out, clk), kgo.DisableAutoCommit())...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var perr atomic.Pointer[error]
	consumed := 0
	last := time.Now()
	for n <= 0 || consumed < n {
		pollCtx, cancel := context.WithDeadline(ctx, last.Add(100*time.Millisecond))
		fs := cl.PollRecords(pollCtx, 10_000)
		cancel()
		if ctx.Err() != nil {
			return commits, ctx.Err()
		}
		fs.EachRecord(func(r *kgo.Record) {
			consumed++
			cl.Produce(ctx, copyOf(r), func(_ *kgo.Record, err error) {
				if err != nil {
					perr.CompareAndSwap(nil, &err)
				}
			})
		})
		if time.Since(last) >= 100*time.Millisecond || (n > 0 && consumed >= n) {
			if err := cl.Flush(ctx); err != nil {
				return commits, err
			}
			if p := perr.Load(); p != nil {
				return commits, *p
			}
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				return commits, err
			}
			commits++
			last = time.Now()
		}
	}
	clk.stop()
	return commits, nil
}

// passExactlyOnce is the same loop in a GroupTransactSession: one
// transaction per 100 ms holds the outputs and the input offsets.
func passExactlyOnce(ctx context.Context, brokers []string, topic string, n int, clk *clock) (commits int, err error) {
	if err := createTopic(ctx, brokers, passOutput, 6); err != nil {
		return 0, fmt.Errorf("create output: %w", err)
	}
	return passLoopEOS(ctx, brokers, "pass-eos", topic, passOutput, n, clk)
}

// passLoopEOS is passExactlyOnce's loop on an existing output topic, with
// the group as transactional id; n <= 0 runs until ctx is cancelled.
func passLoopEOS(ctx context.Context, brokers []string, group, topic, out string, n int, clk *clock) (commits int, err error) {
	sess, err := kgo.NewGroupTransactSession(append(passOpts(brokers, group, topic, out, clk),
		kgo.TransactionalID(group), kgo.TransactionTimeout(10*time.Second))...)
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	endCtx := context.WithoutCancel(ctx)
	var perr atomic.Pointer[error]
	consumed := 0
	for n <= 0 || consumed < n {
		if err := sess.Begin(); err != nil {
			return commits, err
		}
		start, pending := time.Now(), 0
		for time.Since(start) < 100*time.Millisecond && (n <= 0 || consumed+pending < n) {
			pollCtx, cancel := context.WithDeadline(ctx, start.Add(100*time.Millisecond))
			fs := sess.PollRecords(pollCtx, 10_000)
			cancel()
			if ctx.Err() != nil {
				return commits, ctx.Err()
			}
			fs.EachRecord(func(r *kgo.Record) {
				pending++
				sess.Produce(endCtx, copyOf(r), func(_ *kgo.Record, err error) {
					if err != nil {
						perr.CompareAndSwap(nil, &err)
					}
				})
			})
		}
		want := kgo.TryCommit
		if perr.Load() != nil {
			want = kgo.TryAbort
		}
		committed, err := sess.End(endCtx, want)
		switch {
		case err != nil:
			return commits, fmt.Errorf("end transaction: %w", err)
		case perr.Load() != nil:
			return commits, *perr.Load()
		case !committed:
			return commits, errors.New("transaction aborted (a rebalance in a one-member group?)")
		}
		consumed += pending
		commits++
	}
	clk.stop()
	return commits, nil
}

// runRouter runs runtime.Run on the topology until every input record
// is committed (the processor's consumed counter counts committed work).
func runRouter(ctx context.Context, brokers []string, configPath string, g config.Guarantee, n, workers, maxPoll int, noSchema bool, clk *clock) (outs []string, commits int, err error) {
	cfg, err := config.LoadFile(configPath)
	if err != nil {
		return nil, 0, err
	}
	if noSchema {
		for i := range cfg.Inputs {
			cfg.Inputs[i].Schema = ""
		}
	}
	if err := cfg.Apply(config.Overrides{Brokers: brokers, Guarantee: string(g)}); err != nil {
		return nil, 0, err
	}
	top, err := plan.Compile(cfg, filepath.Dir(configPath)+"/")
	if err != nil {
		return nil, 0, err
	}
	opts := []runtime.Opt{
		runtime.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		runtime.WithInstanceID("bench"),
		runtime.WithWorkers(workers),
		runtime.WithKgoOpts(kgo.WithHooks(clk)),
	}
	if maxPoll > 0 {
		opts = append(opts, runtime.WithMaxPollRecords(maxPoll))
	}
	p, err := runtime.New(top, opts...)
	if err != nil {
		return nil, 0, err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	finished := benchFinished(top, p.Metrics(), n)
	for !finished() {
		select {
		case <-ctx.Done():
			stop()
			return nil, 0, ctx.Err()
		case err := <-done:
			stop()
			return nil, 0, fmt.Errorf("processor stopped early: %v", err)
		case <-tick.C:
		}
	}
	// The window closes here; stopping (leaving the group) is not timed.
	clk.stop()
	s := p.Metrics().Snapshot()
	stop()
	if err := <-done; err != nil {
		return nil, 0, err
	}
	if !s.Conserved() {
		return nil, 0, fmt.Errorf("metrics not conserved: %+v", s)
	}
	return top.OutputTopics(), int(s.Commits), nil
}

// benchFinished: done when every input record is committed and, with
// window or assembly routes, stage two has committed every record stage
// one repartitioned (a route with repartition: false counts them under
// the same name).
func benchFinished(top *plan.Plan, m *metrics.Metrics, n int) func() bool {
	rep, _ := top.InternalTopics()
	for _, r := range top.Windows() {
		if r.Window.Direct {
			rep = append(rep, r.Window.RepartitionTopic)
		}
	}
	for _, r := range top.Assemblies() {
		if r.Assembly.Direct {
			rep = append(rep, r.Assembly.RepartitionTopic)
		}
	}
	consumed := func(c *prometheus.CounterVec, topics []string) int {
		n := 0
		for _, t := range topics {
			n += int(testutil.ToFloat64(c.WithLabelValues(t)))
		}
		return n
	}
	finished := func() bool {
		if consumed(m.Consumed, top.InputTopics()) < n {
			return false
		}
		routed := 0
		for _, r := range top.Windows() {
			routed += int(m.Snapshot().Routes[r.Name])
		}
		for _, r := range top.Assemblies() {
			routed += int(m.Snapshot().Routes[r.Name])
		}
		return consumed(m.Repartitioned, rep) >= routed
	}
	return finished
}

// verifyOutputs reads topics read_committed and checks every generated
// input id appears exactly once (each example route writes one record per
// input; the pass-through copies each).
func verifyOutputs(ctx context.Context, brokers, topics []string, n int) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	seen := make(map[string]struct{}, n)
	total, dup := 0, 0
	idle := time.Now()
	for time.Since(idle) < 3*time.Second && total < n+1 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		got := 0
		fs.EachRecord(func(r *kgo.Record) {
			got++
			id := gen.IDOf(r.Key, r.Value)
			if _, ok := seen[id]; ok {
				dup++
			}
			seen[id] = struct{}{}
		})
		total += got
		if got > 0 {
			idle = time.Now()
		}
		if total == n {
			// Anything more (a duplicate) would follow at once.
			idle = idle.Add(-2 * time.Second)
		}
	}
	if total != n || dup != 0 || len(seen) != n {
		return total, fmt.Errorf("read back %d records (%d distinct ids, %d duplicates), want %d", total, len(seen), dup, n)
	}
	return total, nil
}

// cmdSummarize reads run results (JSON lines) and prints the medians.
func cmdSummarize(args []string, w io.Writer) error {
	var rs []result
	read := func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if !strings.HasPrefix(line, "{") {
				continue
			}
			var x result
			if err := json.Unmarshal([]byte(line), &x); err != nil {
				return err
			}
			if x.Mode != "" {
				rs = append(rs, x)
			}
		}
		return sc.Err()
	}
	if len(args) == 0 {
		if err := read(os.Stdin); err != nil {
			return err
		}
	}
	for _, a := range args {
		f, err := os.Open(a)
		if err != nil {
			return err
		}
		err = read(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	by := map[string][]result{}
	for _, r := range rs {
		by[r.Mode] = append(by[r.Mode], r)
	}
	med := map[string]result{}
	for m, xs := range by {
		sort.Slice(xs, func(i, j int) bool { return xs[i].RecordsPS < xs[j].RecordsPS })
		med[m] = xs[len(xs)/2]
	}
	fmt.Fprintln(w, "| mode | runs | records/s (median) | min – max | ratio to passthrough-alo | ratio to pass-through, same guarantee | CPU s (measured process) | µs CPU per record | broker CPU s | other load, cores | calibration, ns | commits | verified |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	order := slices.Clone(modes)
	var extra []string
	for m := range by {
		if !slices.Contains(modes, m) {
			extra = append(extra, m)
		}
	}
	sort.Strings(extra)
	for _, m := range append(order, extra...) {
		xs := by[m]
		if len(xs) == 0 {
			continue
		}
		r := med[m]
		ratio := func(ref string) string {
			if b, ok := med[ref]; ok && b.RecordsPS > 0 {
				return fmt.Sprintf("%.2f", r.RecordsPS/b.RecordsPS)
			}
			return "–"
		}
		same := PassALO
		if strings.Contains(m, "-eos") {
			same = PassEOS
		}
		verified := true
		for _, x := range xs {
			verified = verified && x.Verified
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s – %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.0f | %d | %v |\n",
			m, len(xs), kilo(r.RecordsPS), kilo(xs[0].RecordsPS), kilo(xs[len(xs)-1].RecordsPS),
			ratio(PassALO), ratio(same), r.CPUSeconds, r.CPUSeconds/float64(r.Records)*1e6, r.BrokerCPU, r.OtherCores, r.CalibNS, r.Commits, verified)
	}
	return nil
}

func kilo(v float64) string {
	if v >= 1e6 {
		return fmt.Sprintf("%.2f M", v/1e6)
	}
	return fmt.Sprintf("%.0f k", v/1e3)
}

// serviceKey is the "service" field of an event (nil for a malformed one).
func serviceKey(v []byte) []byte {
	if s := gjson.GetBytes(v, "service"); s.Type == gjson.String && s.Str != "" {
		return []byte(s.Str)
	}
	return nil
}
