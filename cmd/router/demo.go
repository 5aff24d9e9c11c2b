package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/examples"
	"github.com/sidestream/sidestream/internal/api"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/live"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/srlocal"
	"github.com/sidestream/sidestream/internal/wire"
)

// demoResult is the one JSON line `router demo` prints on stdout.
type demoResult struct {
	Produced     int64            `json:"produced"`
	Consumed     int64            `json:"consumed"`
	Routes       map[string]int64 `json:"routes"`
	Dirty        int64            `json:"dirty"`
	DirtyReasons map[string]int64 `json:"dirty_reasons"`
	Dropped      int64            `json:"dropped"`
	Late         int64            `json:"late,omitempty"`
	WindowOut    map[string]int64 `json:"window_results,omitempty"`
	Conservation bool             `json:"conservation"`
	Guarantee    string           `json:"guarantee"`
	Commits      int64            `json:"commits"`
	Aborts       int64            `json:"aborts"`
	Seconds      float64          `json:"seconds"`
	RecordsPerS  float64          `json:"records_per_second"`
	Problems     []string         `json:"problems,omitempty"`
	// Assembly holds the assembly outputs read back (assembled,
	// incomplete, duplicate) when the topology has an assembly route.
	Assembly map[string]int64 `json:"assembly,omitempty"`
}

// demoIgnores are the router run flags the demo cannot honour.
var demoIgnores = map[string]bool{"brokers": true}

// demoFlags are router run's flags plus the demo's own.
type demoFlags struct {
	runFlags
	records   int
	rate      float64
	seed      uint64
	quiet     bool
	generator string
	linger    time.Duration
	kafkaPort int
}

// parseDemoFlags parses and checks the demo's flags; a bad one is an
// exitError with code 2.
func parseDemoFlags(args []string, stderr io.Writer) (*demoFlags, error) {
	fs := flag.NewFlagSet("router demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &demoFlags{}
	f.register(fs)
	fs.IntVar(&f.records, "records", 50000, "records the generator writes")
	fs.Float64Var(&f.rate, "rate", 0, "records per second the generator writes (0: as fast as possible)")
	fs.Uint64Var(&f.seed, "seed", 1, "generator seed")
	fs.BoolVar(&f.quiet, "quiet", false, "no live summary")
	fs.StringVar(&f.generator, "generator", "auto", "logs, orders, parts (assembly parts), or auto (parts for a topology with an assembly route, orders when the first input topic names orders)")
	fs.DurationVar(&f.linger, "linger", 0, "after the verdict, keep the embedded Kafka and the web view (/ui) up this long (Ctrl-C ends it), e.g. to try router tail and redrive on it")
	fs.IntVar(&f.kafkaPort, "kafka-port", 0, "port of the embedded Kafka on 127.0.0.1 (0: any free port)")
	// The embedded broker, the generator, the read-back and the router
	// share the CPU: a starved commit must not outlive its transaction,
	// or the broker fences it and the batch starts over.
	fs.Lookup("transaction-timeout").DefValue = "1m0s"
	_ = fs.Set("transaction-timeout", "1m")
	fs.Lookup("listen").DefValue = "127.0.0.1:8080"
	_ = fs.Set("listen", envOr("SIDESTREAM_LISTEN", "127.0.0.1:8080"))
	_ = fs.Set("log-level", envOr("SIDESTREAM_LOG_LEVEL", "warn"))
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := noArgs(fs); err != nil {
		return nil, err
	}
	if f.envErr != nil {
		return nil, exitError{code: 2, msg: "router demo: " + f.envErr.Error()}
	}
	// The demo runs its own Kafka: a flag that would point elsewhere is
	// refused rather than ignored.
	var ignored []string
	fs.Visit(func(fl *flag.Flag) {
		if demoIgnores[fl.Name] {
			ignored = append(ignored, "--"+fl.Name)
		}
	})
	switch {
	case len(ignored) > 0:
		return nil, exitError{code: 2, msg: fmt.Sprintf("router demo: %s: the demo runs its own embedded Kafka (use --kafka-port to reach it); this flag is for router run", strings.Join(ignored, ", "))}
	case f.records < 1:
		return nil, exitError{code: 2, msg: "--records must be at least 1"}
	case f.linger < 0 || f.kafkaPort < 0 || f.kafkaPort > 65535:
		return nil, exitError{code: 2, msg: "--linger must not be negative and --kafka-port must be 0 to 65535"}
	}
	return f, nil
}

func cmdDemo(args []string, stdout, stderr io.Writer) error {
	f, err := parseDemoFlags(args, stderr)
	if err != nil {
		return err
	}
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	cfgPath, cleanup, err := demoConfigPath(f.config)
	if err != nil {
		return err
	}
	defer cleanup()
	cfg, err := config.LoadFile(cfgPath)
	if err != nil {
		var ce *config.ConfigError
		if errors.As(err, &ce) {
			return exitError{code: 1, msg: ce.Error()}
		}
		return err
	}
	// The embedded broker: franz-go's kfake, in this process.
	kopts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(cfg.Topics.Partitions, inputTopics(cfg)...)}
	if f.kafkaPort > 0 {
		kopts = append(kopts, kfake.Ports(f.kafkaPort))
	}
	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		return fmt.Errorf("start the embedded Kafka: %w", err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	f.brokers = strings.Join(brokers, ",")
	// The in-process registry of a registry-backed input: the file's and
	// the environment's schema_registry settings do not apply.
	reg, err := startDemoRegistry(cfg, cfgPath, stderr)
	if err != nil {
		return err
	}
	o := f.overrides()
	if reg != nil {
		defer reg.Close()
		o.Registry = config.RegistryOverrides{URL: reg.URL()}
	}
	// The embedded broker is plaintext: security settings (of the file or
	// the environment) do not apply to the demo.
	top, err := loadTopology(cfgPath, o, true)
	if err != nil {
		return err
	}
	if f.instanceID == "" {
		f.instanceID = "demo"
	}
	fmt.Fprintf(stderr, "demo: embedded Kafka at %s; topology %q (%s); API on %s (/ui /metrics /topology /tasks /readyz)\n",
		f.brokers, top.Settings.ApplicationID, top.Settings.Guarantee, f.listen)
	return runDemo(f, top, brokers, reg, log, stdout, stderr)
}

// demoAvroSchema is the writer schema of the demo's Avro log events,
// relative to the topology file.
const demoAvroSchema = "schemas/log-event.avsc"

// demoRegistry is the demo's in-process schema registry (srlocal.Registry)
// with the generator's Avro schema registered.
type demoRegistry struct {
	*srlocal.Registry
	schema string // the Avro log events' schema text
	id     int    // its id
}

// startDemoRegistry starts the in-process registry of a topology with a
// registry-backed input and registers demoAvroSchema under each Avro
// input's <topic>-value subject; nil for a topology without one. The
// demo generates Avro only: a protobuf or json_schema input is refused.
func startDemoRegistry(cfg *config.Config, cfgPath string, stderr io.Writer) (*demoRegistry, error) {
	path := filepath.Join(filepath.Dir(cfgPath), demoAvroSchema)
	var schemas []srlocal.Schema
	var subjects []string
	for _, in := range cfg.Inputs {
		switch {
		case in.Format == config.InputAvro:
			schemas = append(schemas, srlocal.Schema{Subject: in.Topic + "-value", Path: path, Type: sr.TypeAvro})
			subjects = append(subjects, in.Topic+"-value")
		case config.RegistryFormat(in.Format):
			return nil, exitError{code: 2, msg: fmt.Sprintf("router demo: input %q has format %s: the demo generates json and avro only (run it with router run and a registry)", in.Topic, in.Format)}
		}
	}
	if len(schemas) == 0 {
		return nil, nil
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, exitError{code: 1, msg: fmt.Sprintf("router demo: the Avro generator's schema: %v", err)}
	}
	lr, err := srlocal.Start(schemas)
	if err != nil {
		return nil, err
	}
	r := &demoRegistry{Registry: lr, schema: string(text), id: lr.IDs[subjects[0]]}
	ignored := ""
	if cfg.SchemaRegistry.URL != "" || os.Getenv(config.EnvRegistryURL) != "" {
		ignored = "; the schema_registry settings of the file and " + config.EnvRegistryURL + " do not apply"
	}
	fmt.Fprintf(stderr, "demo: in-process schema registry at %s: %s registered under %s (id %d)%s\n",
		r.URL(), demoAvroSchema, strings.Join(subjects, ", "), r.id, ignored)
	return r, nil
}

// demoConfigPath is the --config file, or the default example written to
// a temporary folder (removed by cleanup).
func demoConfigPath(given string) (path string, cleanup func(), err error) {
	if given != "" {
		return given, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "sidestream-demo-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	if err := os.CopyFS(dir, examples.FS); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("write example topology: %w", err)
	}
	return filepath.Join(dir, examples.Default), cleanup, nil
}

// runDemo serves the router and the web view on the embedded Kafka, runs
// the generator, waits for every record to be committed and prints the
// verdict.
func runDemo(f *demoFlags, top *plan.Plan, brokers []string, reg *demoRegistry, log *slog.Logger, stdout, stderr io.Writer) error {
	m := metrics.New()
	ui := live.New(top, m, live.Options{})
	uiAddr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- serveWith(ctx, top, f.runFlags, log, m, serveHooks{ui: ui, listening: func(addr string) {
			fmt.Fprintf(stderr, "demo: web view at http://%s/ui\n", addr)
			uiAddr <- addr
		}})
	}()
	start := time.Now()
	produced, expect, err := demoGenerate(ctx, f, top, brokers, reg)
	if err != nil {
		return err
	}
	if err := f.waitCommitted(top, m, produced, served, stderr); err != nil {
		return err
	}
	elapsed := time.Since(start)
	if s := m.Snapshot(); !f.quiet {
		fmt.Fprintln(stderr, summaryLine(s, s.Consumed/elapsed.Seconds()))
	}
	cancel()
	if err := <-served; err != nil {
		return fmt.Errorf("router: %w", err)
	}
	// The last transaction (the one that fired the last TTLs) is
	// committed now: count it.
	res, err := demoVerdict(top, m, brokers, log, produced, expect, elapsed)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(b))
	if f.linger > 0 {
		addr := ""
		select {
		case addr = <-uiAddr:
		default:
		}
		if err := lingerDemo(top, m, ui, addr, f.brokers, f.linger, stderr); err != nil {
			return err
		}
	}
	if !res.Conservation {
		return exitError{code: 1, msg: "demo: conservation does not hold: " + strings.Join(res.Problems, "; ")}
	}
	return nil
}

// demoExpect is what the generator's oracle says the verdict must read
// back.
type demoExpect struct {
	assembly gen.AssemblyExpect
	// reasons are the dirty reasons of the Avro generator's hostile
	// frames (nil: not checked).
	reasons map[string]int64
}

// demoGenerate writes the generator's records: logs (JSON, or Avro to an
// avro input) or orders to the first input, or the parts of whole orders
// for an assembly topology.
func demoGenerate(ctx context.Context, f *demoFlags, top *plan.Plan, brokers []string, reg *demoRegistry) (int64, demoExpect, error) {
	kind := f.generator
	if kind == "auto" {
		kind = "logs"
		if strings.Contains(top.InputTopics()[0], "order") {
			kind = "orders"
		}
		if len(top.Assemblies()) > 0 {
			kind = "parts"
		}
	}
	var expect demoExpect
	avroIn := reg != nil && top.Inputs[0].Format == config.InputAvro
	switch {
	case avroIn && kind != "logs":
		return 0, expect, exitError{code: 2, msg: fmt.Sprintf("--generator %s: an avro input takes the Avro log events (--generator logs)", kind)}
	case kind == "parts":
		// The parts generator: --records counts input records (whole
		// orders: at least that many parts).
		n, exp, err := generateParts(ctx, brokers, top, f.records, f.rate, f.seed)
		return n, demoExpect{assembly: exp}, err
	case kind == "logs" && avroIn:
		g, err := gen.NewAvroLogs(f.seed, reg.schema, reg.id)
		if err != nil {
			return 0, expect, err
		}
		expect.reasons = map[string]int64{}
		next := func() gen.Event {
			ev := g.Next()
			if r, ok := gen.ReasonOf[ev.Kind]; ok {
				expect.reasons[r]++
			}
			return ev
		}
		n, err := generate(ctx, brokers, top.InputTopics()[0], f.records, f.rate, next)
		return n, expect, err
	case kind == "logs":
		n, err := generate(ctx, brokers, top.InputTopics()[0], f.records, f.rate, gen.New(f.seed).Next)
		return n, expect, err
	case kind == "orders":
		n, err := generate(ctx, brokers, top.InputTopics()[0], f.records, f.rate, gen.NewOrders(f.seed).Next)
		return n, expect, err
	}
	return 0, expect, exitError{code: 2, msg: fmt.Sprintf("--generator %q: use logs, orders, parts or auto", kind)}
}

// waitCommitted waits until every produced record is consumed and
// committed, printing the live summary once a second.
func (f *demoFlags) waitCommitted(top *plan.Plan, m *metrics.Metrics, produced int64, served <-chan error, stderr io.Writer) error {
	limit := time.Now().Add(2*time.Minute + time.Duration(f.records/2000)*time.Second)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := m.Snapshot()
	lastAt := time.Now()
	for {
		s := m.Snapshot()
		if done(top, m, produced) {
			return nil
		}
		select {
		case err := <-served:
			return fmt.Errorf("router stopped early: %v", err)
		case <-tick.C:
		case <-time.After(50 * time.Millisecond):
			continue
		}
		if !f.quiet {
			rate := (s.Consumed - last.Consumed) / time.Since(lastAt).Seconds()
			fmt.Fprintln(stderr, summaryLine(s, rate))
		}
		last, lastAt = s, time.Now()
		if time.Now().After(limit) {
			return exitError{code: 1, msg: fmt.Sprintf("demo: timed out: %d of %d records consumed", int64(s.Consumed), produced)}
		}
	}
}

// demoVerdict reads every output back read_committed and checks
// conservation (and the assemblies and the dirty reasons against the
// generator's oracle).
func demoVerdict(top *plan.Plan, m *metrics.Metrics, brokers []string, log *slog.Logger, produced int64, expect demoExpect, elapsed time.Duration) (demoResult, error) {
	s := m.Snapshot()
	res := demoResult{
		Produced: produced, Consumed: int64(s.Consumed), Dropped: int64(s.Dropped),
		Guarantee: string(top.Settings.Guarantee), Commits: int64(s.Commits), Aborts: int64(s.Aborts),
		Seconds: elapsed.Seconds(), RecordsPerS: float64(produced) / elapsed.Seconds(),
	}
	if len(top.Windows()) > 0 {
		res.WindowOut = map[string]int64{}
		for k, v := range s.Results {
			res.WindowOut[k] = int64(v)
		}
	}
	var err error
	res.Routes, res.Dirty, res.DirtyReasons, res.Late, err = readBack(brokers, top, log)
	if err != nil {
		return res, err
	}
	res.Consumed = int64(inputConsumed(top, m))
	res.Conservation, res.Problems = conservation(res, s, top, float64(res.Consumed))
	if expect.reasons != nil && !maps.Equal(res.DirtyReasons, expect.reasons) {
		res.Problems = append(res.Problems, fmt.Sprintf("dirty reasons %v, the generator wrote %v", res.DirtyReasons, expect.reasons))
		res.Conservation = false
	}
	if len(top.Assemblies()) > 0 {
		var problems []string
		res.Assembly, problems = checkAssemblies(brokers, top, s, expect.assembly)
		res.Problems = append(res.Problems, problems...)
		res.Conservation = res.Conservation && len(problems) == 0
	}
	return res, nil
}

func inputTopics(cfg *config.Config) []string {
	var out []string
	for _, in := range cfg.Inputs {
		out = append(out, in.Topic)
	}
	return out
}

func summaryLine(s metrics.Snapshot, rate float64) string {
	names := make([]string, 0, len(s.Routes))
	for n := range s.Routes {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "consumed=%d", int64(s.Consumed))
	for _, n := range names {
		fmt.Fprintf(&b, " %s=%d", n, int64(s.Routes[n]))
	}
	fmt.Fprintf(&b, " dirty=%d dropped=%d rate=%.0f/s lag=%d commits=%d", int64(s.Dirty), int64(s.Dropped), rate, int64(s.Lag), int64(s.Commits))
	return b.String()
}

// generate writes n events of next to topic at rate per second (0: as
// fast as possible) and returns how many the broker acknowledged.
func generate(ctx context.Context, brokers []string, topic string, n int, rate float64, next func() gen.Event) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	start := time.Now()
	var failed error
	for i := 0; i < n; i++ {
		if rate > 0 {
			if wait := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
				time.Sleep(wait)
			}
		}
		ev := next()
		cl.Produce(ctx, &kgo.Record{Key: ev.Key, Value: ev.Value, Timestamp: time.UnixMilli(max(ev.TS, 0))}, func(_ *kgo.Record, err error) {
			if err != nil && failed == nil {
				failed = err
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if failed != nil {
		return 0, fmt.Errorf("generator: %w", failed)
	}
	return int64(n), nil
}

// readBack reads every output topic from the start with a read_committed
// consumer and counts records per route and dirty reasons.
func readBack(brokers []string, top *plan.Plan, log *slog.Logger) (map[string]int64, int64, map[string]int64, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	recs, err := readback.ReadCommitted(ctx, brokers, top.OutputTopics()...)
	if err != nil {
		return nil, 0, nil, 0, err
	}
	byTopic := map[string]string{}
	for _, r := range top.Routes {
		byTopic[r.Topic] = r.Name
		if r.Window != nil {
			byTopic[r.Window.Spec.LateTopic] = "late"
		}
		if a := r.Assembly; a != nil {
			byTopic[a.Spec.IncompleteTopic] = "assembly"
			byTopic[a.Spec.DuplicateTopic] = "assembly"
		}
	}
	routes := map[string]int64{}
	for _, r := range top.Routes {
		routes[r.Name] = 0
	}
	var dirty, late int64
	reasons := map[string]int64{}
	for _, r := range recs {
		if r.Topic == top.Dirty.Topic {
			dirty++
			for _, h := range r.Headers {
				if h.Key == wire.HeaderReason {
					reasons[string(h.Value)]++
				}
			}
			continue
		}
		if byTopic[r.Topic] == "late" {
			late++
			continue
		}
		if byTopic[r.Topic] == "assembly" {
			continue // checked by checkAssemblies
		}
		routes[byTopic[r.Topic]]++
	}
	log.Debug("read back", "records", len(recs))
	return routes, dirty, reasons, late, nil
}

// conservation checks the demo's accounting: everything produced was
// consumed, every consumed record is routed, dirty or dropped, and what
// was read back equals what the router counted.
func conservation(res demoResult, s metrics.Snapshot, top *plan.Plan, inputs float64) (bool, []string) {
	var problems []string
	if int64(inputs) != res.Produced {
		problems = append(problems, fmt.Sprintf("consumed %.0f input records != produced %d", inputs, res.Produced))
	}
	var windowRecords float64
	for _, r := range top.Routes {
		n := res.Routes[r.Name]
		if r.Assembly != nil {
			// Its topic holds assembled records; the router's route count
			// is the parts it repartitioned.
			windowRecords += s.Routes[r.Name]
			if float64(n) != s.Assemblies[metrics.ResultCompleted] {
				problems = append(problems, fmt.Sprintf("assembly route %s: read back %d, router assembled %.0f", r.Name, n, s.Assemblies[metrics.ResultCompleted]))
			}
			continue
		}
		if r.Window != nil {
			// Its topic holds window results, checked against the
			// router's count of results.
			windowRecords += s.Routes[r.Name]
			var results float64
			for _, v := range s.Results {
				results += v
			}
			if float64(n) != results {
				problems = append(problems, fmt.Sprintf("window route %s: read back %d results, router wrote %.0f", r.Name, n, results))
			}
			continue
		}
		if float64(n) != s.Routes[r.Name] {
			problems = append(problems, fmt.Sprintf("route %s: read back %d, router wrote %.0f", r.Name, n, s.Routes[r.Name]))
		}
	}
	if float64(res.Dirty) != s.Dirty {
		problems = append(problems, fmt.Sprintf("dirty: read back %d, router wrote %.0f", res.Dirty, s.Dirty))
	}
	if float64(res.Late) != s.Late {
		problems = append(problems, fmt.Sprintf("late: read back %d, router wrote %.0f", res.Late, s.Late))
	}
	if !s.Conserved() {
		problems = append(problems, fmt.Sprintf("consumed %.0f != routed %.0f + dirty %.0f + dropped %.0f + aggregated %.0f + late %.0f",
			s.Consumed, s.Routed, s.Dirty, s.Dropped, s.Aggregated, s.Late))
	}
	if s.Consumed != inputs+windowRecords {
		problems = append(problems, fmt.Sprintf("consumed %.0f != %.0f inputs + %.0f repartitioned", s.Consumed, inputs, windowRecords))
	}
	return len(problems) == 0, problems
}

// inputConsumed is the committed count of input records (the consumed
// counter also counts repartitioned records of window routes).
func inputConsumed(top *plan.Plan, m *metrics.Metrics) float64 {
	var n float64
	for _, t := range top.InputTopics() {
		n += testutil.ToFloat64(m.Consumed.WithLabelValues(t))
	}
	return n
}

// done reports whether every produced record is consumed and committed,
// and every record sent to a window route has been through stage two.
func done(top *plan.Plan, m *metrics.Metrics, produced int64) bool {
	if int64(inputConsumed(top, m)) < produced {
		return false
	}
	for _, r := range top.Windows() {
		if testutil.ToFloat64(m.Consumed.WithLabelValues(r.Window.RepartitionTopic)) < testutil.ToFloat64(m.RouteWritten.WithLabelValues(r.Name)) {
			return false
		}
	}
	return assembliesDone(top, m)
}

var _ fs.FS = examples.FS

// lingerDemo keeps the embedded Kafka (still open: the caller closes it)
// and the web view up after the demo, with the router stopped, for d or
// until SIGINT or SIGTERM.
func lingerDemo(top *plan.Plan, m *metrics.Metrics, ui *live.State, addr, brokers string, d time.Duration, stderr io.Writer) error {
	finished := func() (bool, string) {
		return false, "demo finished: the router stopped; the embedded Kafka stays up"
	}
	ui.SetTasks(nil, finished)
	var srv *http.Server
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("serve the web view after the demo: %w", err)
		}
		srv = api.Server(addr, api.Handler(api.Config{
			Probe: lingerProbe{finished}, Describer: top, Tasks: noTasks{}, Metrics: m.Handler(), UI: uiView{ui},
		}))
		go func() { _ = srv.Serve(ln) }()
	}
	// Listen for Ctrl-C before saying it ends the linger.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "demo: done; embedded Kafka at %s and web view at http://%s/ui stay up for %s (Ctrl-C ends it)\n", brokers, addr, d)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return nil
}

type lingerProbe struct{ ready func() (bool, string) }

func (lingerProbe) Healthy() (bool, string) { return true, "ok" }
func (p lingerProbe) Ready() (bool, string) { return p.ready() }

type noTasks struct{}

func (noTasks) TaskList() any { return []any{} }
