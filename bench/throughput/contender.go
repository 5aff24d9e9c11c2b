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
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/runtime"
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
	_ = fs.Parse(args)
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
	case "w1", "w2", "w3":
		err = runWorkload(ctx, bs, filepath.Join(*topologies, *workload+".yaml"), *guarantee, *input, *prefix, *group)
	default:
		return fmt.Errorf("contender: unknown workload %q (pass, w1, w2, w3)", *workload)
	}
	if ctx.Err() != nil {
		return nil // stopped by the harness
	}
	return err
}

// runWorkload runs the router on a bench topology: the harness's input,
// PREFIX replaced in every topic, the group as application id.
func runWorkload(ctx context.Context, brokers []string, file, guarantee, input, prefix, group string) error {
	top, err := workloadTopology(file, guarantee, input, prefix, group, brokers)
	if err != nil {
		return err
	}
	p, err := runtime.New(top,
		runtime.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		runtime.WithInstanceID("bench"))
	if err != nil {
		return err
	}
	fmt.Println(`{"started":true}`)
	return p.Run(ctx)
}

// workloadTopology loads and compiles a bench topology for one run.
func workloadTopology(file, guarantee, input, prefix, group string, brokers []string) (*plan.Plan, error) {
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
	g := config.ExactlyOnce
	if guarantee == "alo" {
		g = config.AtLeastOnce
	}
	if err := cfg.Apply(config.Overrides{Brokers: brokers, ApplicationID: group, Guarantee: string(g)}); err != nil {
		return nil, err
	}
	return plan.Compile(cfg, filepath.Dir(file)+"/")
}
