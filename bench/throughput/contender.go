package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/runtime"
	"github.com/sidestream/sidestream/internal/tracing"
)

// cmdContender runs one Go contender of the compare harness until SIGTERM:
// the pass-through limit or the router on a bench workload. The harness
// starts it as a process of its own, so /proc/<pid> holds its CPU time and
// peak RSS alone.
func cmdContender(args []string) error {
	fs := flag.NewFlagSet("contender", flag.ExitOnError)
	workload := fs.String("workload", "w1", "pass (the limit), w1 or w2 (bench/topologies/<workload>.yaml)")
	guarantee := fs.String("guarantee", "eos", "alo (at-least-once) or eos (exactly-once)")
	brokers := fs.String("brokers", "", "bootstrap brokers")
	input := fs.String("input", "", "input topic")
	prefix := fs.String("prefix", "", "prefix of the output topics (PREFIX.main, ...)")
	group := fs.String("group", "", "consumer group, application id and transactional id")
	topologies := fs.String("topologies", "bench/topologies", "directory of the workload topologies")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole process life to this file")
	heapProfile := fs.String("heapprofile", "", "write the heap profile of the moment the live heap was largest to this file")
	var fo featureOpts
	fs.StringVar(&fo.listen, "listen", "", "serve the router's Prometheus metrics on this address (/metrics); the feature contenders' checks read them")
	fs.StringVar(&fo.tableTopic, "table-topic", "", "the topic of the topology's lookup tables (w1-lookup)")
	fs.StringVar(&fo.otlp, "otlp", "", "tracing.endpoint: the OTLP/HTTP URL spans go to (w1-trace)")
	fs.StringVar(&fo.reloadAlt, "reload-alt", "", "on SIGHUP, reload the topology alternately from this file and back from the workload's (the reload contender)")
	_ = fs.Parse(args)
	// SIGHUP ends a Go program that does not handle it: the handler is in
	// place before anything else.
	var hup chan os.Signal
	if fo.reloadAlt != "" {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
	}
	if *heapProfile != "" {
		stop := peakHeapProfile(*heapProfile)
		defer func() { _ = stop() }()
	}
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
	if *brokers == "" || *input == "" || *prefix == "" || *group == "" {
		return errors.New("contender: --brokers, --input, --prefix and --group are required")
	}
	if *guarantee != "alo" && *guarantee != "eos" {
		return fmt.Errorf("contender: guarantee %q is not alo or eos", *guarantee)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bs := strings.Split(*brokers, ",")
	var err error
	switch *workload {
	case "pass":
		if *guarantee == "alo" {
			_, err = passLoopALO(ctx, bs, *group, *input, *prefix+".main", 0, &clock{})
		} else {
			_, err = passLoopEOS(ctx, bs, *group, *input, *prefix+".main", 0, &clock{})
		}
	case "w1", "w2", "w3", "w1-lookup", "w1-topic", "w1-four", "w1-trace":
		if fo.reloadAlt != "" {
			fo.reloadAlt = filepath.Join(*topologies, fo.reloadAlt)
		}
		err = runWorkload(ctx, bs, filepath.Join(*topologies, *workload+".yaml"), *guarantee, *input, *prefix, *group, fo, hup)
	default:
		return fmt.Errorf("contender: unknown workload %q (pass, w1, w2, w3, w1-lookup, w1-topic, w1-four, w1-trace)", *workload)
	}
	if ctx.Err() != nil {
		return nil // stopped by the harness
	}
	return err
}

// runWorkload runs the router on a bench topology: the harness's input,
// PREFIX replaced in every topic, the group as application id. The
// features' options (featureOpts) add what the default contenders do not
// have: a metrics endpoint, a table topic, an OTLP endpoint with the
// tracer the router would build, and reloads on hup.
func runWorkload(ctx context.Context, brokers []string, file, guarantee, input, prefix, group string, fo featureOpts, hup <-chan os.Signal) error {
	top, err := workloadTopologyWith(file, guarantee, input, prefix, group, brokers, fo)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []runtime.Opt{runtime.WithLogger(log), runtime.WithInstanceID("bench")}
	m := metrics.New()
	opts = append(opts, runtime.WithMetrics(m))
	if fo.listen != "" {
		stop, err := serveMetrics(fo.listen, m)
		if err != nil {
			return err
		}
		defer stop()
	}
	// As `router run` does (internal/serve): nil when tracing.spans is off.
	tracer, err := tracing.New(ctx, top)
	if err != nil {
		return err
	}
	if tracer != nil {
		opts = append(opts, runtime.WithTracer(tracer))
		defer func() {
			if err := tracer.Stop(ctx); err != nil {
				log.Warn("tracing: spans not exported at shutdown", "err", err)
			}
		}()
	}
	p, err := runtime.New(top, opts...)
	if err != nil {
		return err
	}
	if hup != nil {
		startReloads(ctx, top, p, m, log, hup, func(alt bool) (*plan.Plan, error) {
			f := file
			if alt {
				f = fo.reloadAlt
			}
			return workloadTopologyWith(f, guarantee, input, prefix, group, brokers, fo)
		})
	}
	fmt.Println(`{"started":true}`)
	return p.Run(ctx)
}

// workloadTopology loads and compiles a bench topology for one run.
func workloadTopology(file, guarantee, input, prefix, group string, brokers []string) (*plan.Plan, error) {
	return workloadTopologyWith(file, guarantee, input, prefix, group, brokers, featureOpts{})
}

// workloadTopologyWith is workloadTopology with a feature's settings: the
// tables' topic and the tracing endpoint, when given.
func workloadTopologyWith(file, guarantee, input, prefix, group string, brokers []string, fo featureOpts) (*plan.Plan, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	// PREFIX stands for the run's topic prefix in every topic of the file
	// (routes, late, incomplete, dirty ...).
	cfg, err := config.Load(file, bytes.ReplaceAll(b, []byte("PREFIX"), []byte(prefix)))
	if err != nil {
		return nil, err
	}
	for i := range cfg.Inputs {
		cfg.Inputs[i].Topic = input
	}
	if fo.tableTopic != "" {
		for i := range cfg.Tables {
			cfg.Tables[i].Topic = fo.tableTopic
		}
	}
	if fo.otlp != "" {
		cfg.Tracing.Endpoint = fo.otlp
	}
	g := config.ExactlyOnce
	if guarantee == "alo" {
		g = config.AtLeastOnce
	}
	if err := cfg.Apply(config.Overrides{Brokers: brokers, ApplicationID: group, Guarantee: string(g)}); err != nil {
		return nil, err
	}
	return plan.Compile(cfg, filepath.Dir(file)+"/")
}
