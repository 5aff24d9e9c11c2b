package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/sidestream/sidestream/internal/cliexit"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/live"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/serve"
	"github.com/sidestream/sidestream/internal/srlocal"
	"github.com/sidestream/sidestream/internal/wire"
)

// Result is the verdict: the one JSON line `router demo` prints on
// stdout.
type Result struct {
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
	// Warnings say what looks wrong although conservation holds (every
	// record went to dirty); each is printed on stderr too.
	Warnings []string `json:"warnings,omitempty"`
	// Assembly holds the assembly outputs read back (assembled,
	// incomplete, duplicate) when the topology has an assembly route.
	Assembly map[string]int64 `json:"assembly,omitempty"`
}

// Options are what `router demo` takes. The zero value of a field is its
// default unless its comment says otherwise.
type Options struct {
	Config    string        // topology file ("": the default example, written to a temporary folder)
	Records   int           // records the generator writes (at least 1; ignored with Inputs)
	Rate      float64       // records per second the generator (or Inputs) writes (0: as fast as possible)
	Seed      uint64        // generator seed (router demo passes 1 unless told)
	Quiet     bool          // no live summary
	Generator string        // logs, orders, parts or auto ("": auto)
	Linger    time.Duration // after the verdict, keep the embedded Kafka and the web view up this long
	KafkaPort int           // port of the embedded Kafka on 127.0.0.1 (0: any free port)
	// Inputs are files of your own records, one JSON value per line, each
	// line one record's value as it is (no key, no headers): "FILE" for
	// the first input topic, "TOPIC=FILE" for another. They replace the
	// generator.
	Inputs []string
	// ApplicationID, Guarantee and CommitInterval override the file's (as
	// router run's flags do); empty overrides nothing.
	ApplicationID, Guarantee, CommitInterval string
	Serve                                    serve.Options
	Log                                      *slog.Logger // nil: warnings and errors as text on stderr
}

// check refuses what the demo cannot do with a usage error.
func (o *Options) check() error {
	switch {
	case o.Records < 1 && len(o.Inputs) == 0:
		return cliexit.Usage("--records must be at least 1")
	case o.Linger < 0 || o.KafkaPort < 0 || o.KafkaPort > 65535:
		return cliexit.Usage("--linger must not be negative and --kafka-port must be 0 to 65535")
	case o.Rate < 0:
		return cliexit.Usage("--rate must not be negative")
	}
	if o.Generator == "" {
		o.Generator = "auto"
	}
	return nil
}

// Run starts an embedded Kafka (and an in-process schema registry for an
// Avro input), serves the topology on it with the web view, writes the
// generator's records (or o.Inputs), waits until every record is
// committed, reads every output back and prints the verdict as one JSON
// line on stdout. A verdict whose conservation fails is a cliexit.Error
// with code 1.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfgPath, cleanup, err := configPath(o.Config)
	if err != nil {
		return err
	}
	defer cleanup()
	cfg, err := config.LoadFile(cfgPath)
	if err != nil {
		var ce *config.ConfigError
		if errors.As(err, &ce) {
			return cliexit.Error{Code: 1, Msg: ce.Error()}
		}
		return err
	}
	inputs, err := readInputs(cfg, o.Inputs)
	if err != nil {
		return err
	}
	// The embedded broker: franz-go's kfake, in this process.
	kopts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(cfg.Topics.Partitions, append(inputTopics(cfg), tableTopics(cfg)...)...)}
	if o.KafkaPort > 0 {
		kopts = append(kopts, kfake.Ports(o.KafkaPort))
	}
	cluster, err := kfake.NewCluster(kopts...)
	if err != nil {
		return fmt.Errorf("start the embedded Kafka: %w", err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	return runOn(ctx, o, cfg, cfgPath, brokers, inputs, stdout, stderr)
}

// runOn runs the demo on the embedded Kafka at brokers.
func runOn(ctx context.Context, o Options, cfg *config.Config, cfgPath string, brokers []string, inputs []inputRecord, stdout, stderr io.Writer) error {
	// The in-process registry of a registry-backed input: the file's and
	// the environment's schema_registry settings do not apply.
	reg, err := startRegistry(cfg, cfgPath, len(inputs) > 0, stderr)
	if err != nil {
		return err
	}
	ov := serve.Overrides(strings.Join(brokers, ","), o.ApplicationID, o.Guarantee, o.CommitInterval)
	if reg != nil {
		defer reg.Close()
		ov.Registry = config.RegistryOverrides{URL: reg.URL()}
	}
	// The embedded broker is plaintext: security settings (of the file or
	// the environment) do not apply to the demo.
	top, err := serve.LoadTopology(cfgPath, ov, true)
	if err != nil {
		return err
	}
	if o.Serve.InstanceID == "" {
		o.Serve.InstanceID = "demo"
	}
	fmt.Fprintf(stderr, "demo: embedded Kafka at %s; topology %q (%s); API on %s (/ui /metrics /topology /tasks /readyz)\n",
		strings.Join(brokers, ","), top.Settings.ApplicationID, top.Settings.Guarantee, o.Serve.Listen)
	return runDemo(ctx, o, top, brokers, reg, inputs, stdout, stderr)
}

// demoAvroSchema is the writer schema of the demo's Avro log events,
// relative to the topology file.
const demoAvroSchema = "schemas/log-event.avsc"

// registry is the demo's in-process schema registry (srlocal.Registry)
// with the generator's Avro schema registered.
type registry struct {
	*srlocal.Registry
	schema string // the Avro log events' schema text
	id     int    // its id
}

// startRegistry starts the in-process registry of a topology with a
// registry-backed input and registers demoAvroSchema under each Avro
// input's <topic>-value subject; nil for a topology without one. The
// demo generates Avro only: a protobuf or json_schema input is refused,
// and so is any registry input when the records come from files (JSON).
func startRegistry(cfg *config.Config, cfgPath string, ownRecords bool, stderr io.Writer) (*registry, error) {
	path := filepath.Join(filepath.Dir(cfgPath), demoAvroSchema)
	var schemas []srlocal.Schema
	var subjects []string
	for _, in := range cfg.Inputs {
		switch {
		case ownRecords && config.RegistryFormat(in.Format):
			return nil, cliexit.Usage("router demo: input %q has format %s: --input sends JSON lines as they are; run this topology with router run and a registry", in.Topic, in.Format)
		case in.Format == config.InputAvro:
			schemas = append(schemas, srlocal.Schema{Subject: in.Topic + "-value", Path: path, Type: sr.TypeAvro})
			subjects = append(subjects, in.Topic+"-value")
		case config.RegistryFormat(in.Format):
			return nil, cliexit.Usage("router demo: input %q has format %s: the demo generates json and avro only (run it with router run and a registry)", in.Topic, in.Format)
		}
	}
	if len(schemas) == 0 {
		return nil, nil
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, cliexit.Failed("router demo: the Avro generator's schema: %v", err)
	}
	lr, err := srlocal.Start(schemas)
	if err != nil {
		return nil, err
	}
	r := &registry{Registry: lr, schema: string(text), id: lr.IDs[subjects[0]]}
	ignored := ""
	if cfg.SchemaRegistry.URL != "" || os.Getenv(config.EnvRegistryURL) != "" {
		ignored = "; the schema_registry settings of the file and " + config.EnvRegistryURL + " do not apply"
	}
	fmt.Fprintf(stderr, "demo: in-process schema registry at %s: %s registered under %s (id %d)%s\n",
		r.URL(), demoAvroSchema, strings.Join(subjects, ", "), r.id, ignored)
	return r, nil
}

// configPath is the --config file, or the default example written to
// a temporary folder (removed by cleanup).
func configPath(given string) (path string, cleanup func(), err error) {
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
// the generator (or writes the input files), waits for every record to be
// committed and prints the verdict.
func runDemo(ctx context.Context, o Options, top *plan.Plan, brokers []string, reg *registry, inputs []inputRecord, stdout, stderr io.Writer) error {
	m := metrics.New()
	ui := live.New(top, m, live.Options{})
	uiAddr := make(chan string, 1)
	if err := writeTables(ctx, brokers, top); err != nil {
		return err
	}
	serveCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- serve.Run(serveCtx, top, o.Serve, o.Log, m, serve.Hooks{UI: ui, Listening: func(addr string) {
			fmt.Fprintf(stderr, "demo: web view at http://%s/ui\n", addr)
			uiAddr <- addr
		}})
	}()
	start := time.Now()
	produced, expect, err := write(serveCtx, o, top, brokers, reg, inputs)
	if err != nil {
		return err
	}
	if err := o.waitCommitted(top, m, produced, served, stderr); err != nil {
		return err
	}
	elapsed := time.Since(start)
	if s := m.Snapshot(); !o.Quiet {
		fmt.Fprintln(stderr, summaryLine(s, s.Consumed/elapsed.Seconds()))
	}
	cancel()
	if err := <-served; err != nil {
		return fmt.Errorf("router: %w", err)
	}
	// The last transaction (the one that fired the last TTLs) is
	// committed now: count it.
	res, err := verdict(ctx, top, m, brokers, o.Log, produced, expect, elapsed)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "demo: warning: "+w)
	}
	b, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(b))
	if o.Linger > 0 {
		addr := ""
		select {
		case addr = <-uiAddr:
		default:
		}
		if err := linger(ctx, top, m, ui, addr, strings.Join(brokers, ","), o.Linger, stderr); err != nil {
			return err
		}
	}
	if !res.Conservation {
		return cliexit.Failed("demo: conservation does not hold: %s", strings.Join(res.Problems, "; "))
	}
	return nil
}

// expectation is what the generator's oracle says the verdict must read
// back.
type expectation struct {
	// assembly is the parts generator's (nil Complete: not checked).
	assembly gen.AssemblyExpect
	// reasons are the dirty reasons of the Avro generator's hostile
	// frames (nil: not checked).
	reasons map[string]int64
}

// write writes the input files' records, or the generator's.
func write(ctx context.Context, o Options, top *plan.Plan, brokers []string, reg *registry, inputs []inputRecord) (int64, expectation, error) {
	if len(o.Inputs) > 0 {
		recs := make([]*kgo.Record, len(inputs))
		for i, in := range inputs {
			recs[i] = &kgo.Record{Topic: in.topic, Value: in.value}
		}
		n, err := produceAll(ctx, brokers, recs, o.Rate)
		return n, expectation{}, err
	}
	return generateKind(ctx, o, top, brokers, reg)
}

// generateKind writes the generator's records: logs (JSON, or Avro to an
// avro input) or orders to the first input, or the parts of whole orders
// for an assembly topology.
func generateKind(ctx context.Context, o Options, top *plan.Plan, brokers []string, reg *registry) (int64, expectation, error) {
	kind := o.Generator
	if kind == "auto" {
		kind = "logs"
		if strings.Contains(top.InputTopics()[0], "order") {
			kind = "orders"
		}
		if len(top.Assemblies()) > 0 {
			kind = "parts"
		}
		if len(top.Tables) > 0 {
			kind = "payments"
		}
	}
	var expect expectation
	avroIn := reg != nil && top.Inputs[0].Format == config.InputAvro
	switch {
	case avroIn && kind != "logs":
		return 0, expect, cliexit.Usage("--generator %s: an avro input takes the Avro log events (--generator logs)", kind)
	case kind == "parts":
		// The parts generator: --records counts input records (whole
		// orders: at least that many parts).
		n, exp, err := generateParts(ctx, brokers, top, o.Records, o.Rate, o.Seed)
		return n, expectation{assembly: exp}, err
	case kind == "logs" && avroIn:
		g, err := gen.NewAvroLogs(o.Seed, reg.schema, reg.id)
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
		n, err := generate(ctx, brokers, top.InputTopics()[0], o.Records, o.Rate, next)
		return n, expect, err
	case kind == "logs":
		n, err := generate(ctx, brokers, top.InputTopics()[0], o.Records, o.Rate, gen.New(o.Seed).Next)
		return n, expect, err
	case kind == "orders":
		n, err := generate(ctx, brokers, top.InputTopics()[0], o.Records, o.Rate, gen.NewOrders(o.Seed).Next)
		return n, expect, err
	case kind == "payments":
		n, err := generate(ctx, brokers, top.InputTopics()[0], o.Records, o.Rate, payments(o.Seed))
		return n, expect, err
	}
	return 0, expect, cliexit.Usage("--generator %q: use logs, orders, parts or auto", kind)
}

// waitCommitted waits until every produced record is consumed and
// committed, printing the live summary once a second.
func (o Options) waitCommitted(top *plan.Plan, m *metrics.Metrics, produced int64, served <-chan error, stderr io.Writer) error {
	limit := time.Now().Add(2*time.Minute + time.Duration(max(o.Records, int(produced))/2000)*time.Second)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := m.Snapshot()
	lastAt := time.Now()
	for {
		s := m.Snapshot()
		if done(top, m, produced, len(o.Inputs) == 0) {
			return nil
		}
		select {
		case err := <-served:
			return fmt.Errorf("router stopped early: %v", err)
		case <-tick.C:
		case <-time.After(50 * time.Millisecond):
			continue
		}
		if !o.Quiet {
			rate := (s.Consumed - last.Consumed) / time.Since(lastAt).Seconds()
			fmt.Fprintln(stderr, summaryLine(s, rate))
		}
		last, lastAt = s, time.Now()
		if time.Now().After(limit) {
			return cliexit.Failed("demo: timed out: %d of %d records consumed", int64(s.Consumed), produced)
		}
	}
}

// verdict reads every output back read_committed and checks
// conservation (and the assemblies and the dirty reasons against the
// generator's oracle).
func verdict(ctx context.Context, top *plan.Plan, m *metrics.Metrics, brokers []string, log *slog.Logger, produced int64, expect expectation, elapsed time.Duration) (Result, error) {
	s := m.Snapshot()
	res := Result{
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
	res.Routes, res.Dirty, res.DirtyReasons, res.Late, err = readBack(ctx, brokers, top, log)
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
		res.Assembly, problems = checkAssemblies(ctx, brokers, top, s, expect.assembly)
		res.Problems = append(res.Problems, problems...)
		res.Conservation = res.Conservation && len(problems) == 0
	}
	res.Warnings = warnings(res)
	return res, nil
}

// warnings are what a verdict that conserves every record can still get
// wrong: a topology whose every record goes to dirty (a wrong input
// format, a schema no record meets) conserves them all.
func warnings(res Result) []string {
	if res.Produced == 0 || res.Dirty < res.Produced {
		return nil
	}
	reasons := make([]string, 0, len(res.DirtyReasons))
	for r, n := range res.DirtyReasons {
		reasons = append(reasons, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(reasons)
	return []string{fmt.Sprintf("every record (%d of %d) went to the dirty route (%s): check the input format, the schema and the expressions; with --linger, router tail --route dirty shows each record's error", res.Dirty, res.Produced, strings.Join(reasons, " "))}
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
func readBack(ctx context.Context, brokers []string, top *plan.Plan, log *slog.Logger) (map[string]int64, int64, map[string]int64, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
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
func conservation(res Result, s metrics.Snapshot, top *plan.Plan, inputs float64) (bool, []string) {
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
// With closeAll (the generator's records), every assembly must also have
// closed; your own records may leave some open for good.
func done(top *plan.Plan, m *metrics.Metrics, produced int64, closeAll bool) bool {
	if int64(inputConsumed(top, m)) < produced {
		return false
	}
	for _, r := range top.Windows() {
		if testutil.ToFloat64(m.Consumed.WithLabelValues(r.Window.RepartitionTopic)) < testutil.ToFloat64(m.RouteWritten.WithLabelValues(r.Name)) {
			return false
		}
	}
	return assembliesDone(top, m, closeAll)
}

// linger keeps the embedded Kafka (still open: the caller closes it) and
// the web view up after the demo, with the router stopped, for d or until
// ctx ends (SIGINT or SIGTERM).
func linger(ctx context.Context, top *plan.Plan, m *metrics.Metrics, ui *live.State, addr, brokers string, d time.Duration, stderr io.Writer) error {
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
			Probe: lingerProbe{finished}, Describer: top, Tasks: noTasks{}, Metrics: m.Handler(), UI: serve.UIView{S: ui},
		}))
		go func() { _ = srv.Serve(ln) }()
	}
	// Listen for Ctrl-C before saying it ends the linger (a caller's ctx
	// may not).
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "demo: done; embedded Kafka at %s and web view at http://%s/ui stay up for %s (Ctrl-C ends it)\n", brokers, addr, d)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
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
