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
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

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
	// Written is the records the router wrote to each output topic, as
	// sidestream_route_records_written_total counted them; the verdict
	// checks each against the topic read back.
	Written map[string]int64 `json:"written"`
	// Seconds is the whole run; ActiveSeconds the part spent writing and
	// consuming the input, which RecordsPerS divides by; Waits the rest,
	// by what was waited for (drain, ttl).
	Seconds       float64            `json:"seconds"`
	ActiveSeconds float64            `json:"active_seconds"`
	Waits         map[string]float64 `json:"waits,omitempty"`
	RecordsPerS   float64            `json:"records_per_second"`
	Problems      []string           `json:"problems,omitempty"`
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
// the generator (or writes the input files) alongside, watches until
// every record is committed and prints the verdict.
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
	ph := &phase{start: time.Now(), waits: map[string]time.Duration{}}
	prog := &progress{}
	wrote := make(chan written, 1)
	go func() {
		n, expect, err := write(serveCtx, o, top, brokers, reg, inputs, prog)
		wrote <- written{n, expect, err}
	}()
	out := newLiveLine(stderr)
	w, err := o.watch(top, m, prog, ph, wrote, served, out)
	if err != nil {
		out.end()
		return err
	}
	cancel()
	if err := <-served; err != nil {
		out.end()
		return fmt.Errorf("router: %w", err)
	}
	if !o.Quiet {
		// After the router stopped: its last transaction (the one that
		// fired the last TTLs) is committed and counted.
		st := ph.status(prog, m.Snapshot(), float64(w.produced)/ph.active().Seconds(), false, "", "")
		st.done, st.waitFor = true, ph.active()
		out.show(st.line())
	}
	out.end()
	// The last transaction (the one that fired the last TTLs) is
	// committed now: count it.
	res, err := verdict(ctx, top, m, brokers, o.Log, w.produced, w.expect, ph)
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

// written is what the writer did: the records the broker acknowledged,
// the generator's oracle, its error.
type written struct {
	produced int64
	expect   expectation
	err      error
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
func write(ctx context.Context, o Options, top *plan.Plan, brokers []string, reg *registry, inputs []inputRecord, prog *progress) (int64, expectation, error) {
	if len(o.Inputs) > 0 {
		recs := make([]*kgo.Record, len(inputs))
		for i, in := range inputs {
			recs[i] = &kgo.Record{Topic: in.topic, Value: in.value}
		}
		n, err := produceAll(ctx, brokers, recs, o.Rate, prog)
		return n, expectation{}, err
	}
	return generateKind(ctx, o, top, brokers, reg, prog)
}

// generateKind writes the generator's records: logs (JSON, or Avro to an
// avro input) or orders to the first input, or the parts of whole orders
// for an assembly topology.
func generateKind(ctx context.Context, o Options, top *plan.Plan, brokers []string, reg *registry, prog *progress) (int64, expectation, error) {
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
		n, exp, err := generateParts(ctx, brokers, top, o.Records, o.Rate, o.Seed, prog)
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
		n, err := generate(ctx, brokers, top.InputTopics()[0], o.Records, o.Rate, next, prog)
		return n, expect, err
	case kind == "logs":
		n, err := generate(ctx, brokers, top.InputTopics()[0], o.Records, o.Rate, gen.New(o.Seed).Next, prog)
		return n, expect, err
	case kind == "orders":
		n, err := generate(ctx, brokers, top.InputTopics()[0], o.Records, o.Rate, gen.NewOrders(o.Seed).Next, prog)
		return n, expect, err
	case kind == "payments":
		n, err := generate(ctx, brokers, top.InputTopics()[0], o.Records, o.Rate, payments(o.Seed), prog)
		return n, expect, err
	}
	return 0, expect, cliexit.Usage("--generator %q: use logs, orders, parts or auto", kind)
}

// watch shows the progress until the writer is done and every record it
// wrote is committed (and through stage two, and every assembly closed):
// once a second, one line rewritten in place on a terminal, or a plain
// line otherwise (none with Quiet). Once every input record is consumed,
// what is left is a wait (drain, ttl), timed apart.
func (o Options) watch(top *plan.Plan, m *metrics.Metrics, prog *progress, ph *phase, wrote <-chan written, served <-chan error, out *liveLine) (written, error) {
	limit := time.Now().Add(2*time.Minute + time.Duration(o.Records/2000)*time.Second)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var w written
	writing := true
	lastConsumed, lastAt := 0.0, time.Now()
	for {
		s := m.Snapshot()
		wait, detail := "", ""
		if !writing && int64(s.Consumed) >= w.produced {
			if wait, detail = waiting(top, m, len(o.Inputs) == 0); wait == "" {
				ph.stop(time.Now())
				return w, nil
			}
		}
		ph.note(time.Now(), wait)
		select {
		case w = <-wrote:
			if w.err != nil {
				return w, w.err
			}
			writing = false
			limit = time.Now().Add(2*time.Minute + time.Duration(w.produced/2000)*time.Second)
			continue
		case err := <-served:
			return w, fmt.Errorf("router stopped early: %v", err)
		case <-tick.C:
		case <-time.After(50 * time.Millisecond):
			continue
		}
		rate := (s.Consumed - lastConsumed) / time.Since(lastAt).Seconds()
		lastConsumed, lastAt = s.Consumed, time.Now()
		if !o.Quiet {
			out.show(ph.status(prog, s, rate, writing, wait, detail).line())
		}
		if time.Now().After(limit) {
			return w, cliexit.Failed("demo: timed out: %d of %d records consumed", int64(s.Consumed), prog.acked.Load())
		}
	}
}

// verdict reads every output back read_committed and checks
// conservation (and the assemblies and the dirty reasons against the
// generator's oracle).
func verdict(ctx context.Context, top *plan.Plan, m *metrics.Metrics, brokers []string, log *slog.Logger, produced int64, expect expectation, ph *phase) (Result, error) {
	s := m.Snapshot()
	active := ph.active()
	res := Result{
		Produced: produced, Consumed: int64(s.Consumed), Dropped: int64(s.Dropped),
		Guarantee: string(top.Settings.Guarantee), Commits: int64(s.Commits), Aborts: int64(s.Aborts),
		Seconds: ph.end.Sub(ph.start).Seconds(), ActiveSeconds: active.Seconds(), Waits: ph.waitSeconds(),
		RecordsPerS: float64(produced) / active.Seconds(), Written: map[string]int64{},
	}
	for t, n := range s.Written {
		res.Written[t] = int64(n)
	}
	if len(top.Windows()) > 0 {
		res.WindowOut = map[string]int64{}
		for k, v := range s.Results {
			res.WindowOut[k] = int64(v)
		}
	}
	var err error
	var read map[string]int64
	res.Routes, res.Dirty, res.DirtyReasons, res.Late, read, err = readBack(ctx, brokers, top, computedTopics(top, s), log)
	if err != nil {
		return res, err
	}
	res.Conservation, res.Problems = conservation(res, s, top, float64(res.Consumed))
	for _, t := range append(top.OutputTopics(), slices.Sorted(maps.Keys(computedTopics(top, s)))...) {
		if read[t] != res.Written[t] {
			res.Problems = append(res.Problems, fmt.Sprintf("topic %s: read back %d, the router counted %d written", t, read[t], res.Written[t]))
			res.Conservation = false
		}
	}
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

// generate writes n events of next to topic at rate per second (0: as
// fast as possible) and returns how many the broker acknowledged.
func generate(ctx context.Context, brokers []string, topic string, n int, rate float64, next func() gen.Event, prog *progress) (int64, error) {
	return produce(ctx, brokers, n, rate, prog, func(int) *kgo.Record {
		ev := next()
		return &kgo.Record{Topic: topic, Key: ev.Key, Value: ev.Value, Timestamp: time.UnixMilli(max(ev.TS, 0))}
	})
}

// produce writes the n records of rec at rate per second (0: as fast as
// possible), counting each acknowledged in prog, and returns how many
// the broker acknowledged (all n, or an error).
func produce(ctx context.Context, brokers []string, n int, rate float64, prog *progress, rec func(i int) *kgo.Record) (int64, error) {
	prog.target.Store(int64(n))
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var failed atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
			return
		}
		prog.ack()
	}
	start := time.Now()
	for i := range n {
		if rate > 0 {
			if wait := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
				select {
				case <-ctx.Done():
					return 0, ctx.Err()
				case <-time.After(wait):
				}
			}
		}
		cl.Produce(ctx, rec(i), promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if err := failed.Load(); err != nil {
		return 0, fmt.Errorf("generator: %w", *err)
	}
	return int64(n), nil
}

// readBack reads every output topic from the start with a read_committed
// consumer and counts records per route and dirty reasons.
func readBack(ctx context.Context, brokers []string, top *plan.Plan, computed map[string]string, log *slog.Logger) (map[string]int64, int64, map[string]int64, int64, map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	topics := top.OutputTopics()
	for t := range computed {
		topics = append(topics, t)
	}
	recs, err := readback.ReadCommitted(ctx, brokers, topics...)
	if err != nil {
		return nil, 0, nil, 0, nil, err
	}
	perTopic := map[string]int64{}
	for _, r := range recs {
		perTopic[r.Topic]++
	}
	byTopic := maps.Clone(computed)
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
	return routes, dirty, reasons, late, perTopic, nil
}

// computedTopics are the topics the router wrote for routes whose topic
// is computed per record, with their route: they are read back too.
func computedTopics(top *plan.Plan, s metrics.Snapshot) map[string]string {
	out := map[string]string{}
	for t, route := range s.WrittenBy {
		if r := top.Route(route); r != nil && r.TopicFrom != nil {
			out[t] = route
		}
	}
	return out
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
		problems = append(problems, fmt.Sprintf("consumed %.0f + repartitioned %.0f != routed %.0f + dirty %.0f + dropped %.0f + aggregated %.0f + late %.0f + parts + overflowed",
			s.Consumed, s.Repartitioned, s.Routed, s.Dirty, s.Dropped, s.Aggregated, s.Late))
	}
	if s.Consumed != inputs || s.Repartitioned != windowRecords {
		problems = append(problems, fmt.Sprintf("consumed %.0f inputs and %.0f repartitioned records, the routes took %.0f inputs and %.0f records into window and assembly routes", s.Consumed, s.Repartitioned, inputs, windowRecords))
	}
	return len(problems) == 0, problems
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
