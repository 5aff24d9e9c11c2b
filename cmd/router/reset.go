package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/reset"
)

// cmdReset resets an application for reprocessing: input offsets moved,
// repartition and changelog topics deleted (reset.NewPlan), and the
// local pebble state of those changelogs removed.
// resetFlags are router reset's flags.
type resetFlags struct {
	config, brokers, stateDir, format string
	dryRun                            bool
	timeout                           time.Duration
	target                            reset.To
}

func parseResetFlags(args []string, stderr io.Writer) (*resetFlags, error) {
	fs := flag.NewFlagSet("router reset", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &resetFlags{}
	fs.StringVar(&f.config, "config", os.Getenv("SIDESTREAM_CONFIG"), "topology file (env SIDESTREAM_CONFIG)")
	fs.StringVar(&f.brokers, "brokers", "", "comma-separated brokers, overriding the file and SIDESTREAM_BROKERS")
	to := fs.String("to", "earliest", "where the input offsets go: earliest, latest, or an RFC 3339 time (the first record at or after it)")
	fs.StringVar(&f.stateDir, "state-dir", "", "local pebble state to remove (the changelogs' directories below it); default state.dir when state.store is pebble")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the plan; change nothing")
	fs.StringVar(&f.format, "format", "table", "how to print the plan: table or json")
	fs.DurationVar(&f.timeout, "timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	bad := func(format string, a ...any) error {
		return exitError{code: 2, msg: "router reset: " + fmt.Sprintf(format, a...)}
	}
	switch *to {
	case "earliest":
	case "latest":
		f.target.Latest = true
	default:
		at, err := time.Parse(time.RFC3339, *to)
		if err != nil {
			return nil, bad("--to %q: use earliest, latest or an RFC 3339 time such as 2026-12-01T00:00:00Z", *to)
		}
		f.target.At = at
	}
	switch {
	case fs.NArg() > 0:
		return nil, bad("unexpected argument %q (flags only)", fs.Arg(0))
	case f.format != "table" && f.format != "json":
		return nil, bad("--format %q: use table or json", f.format)
	case f.timeout <= 0:
		return nil, bad("--timeout must be positive")
	}
	return f, nil
}

func cmdReset(args []string, stdout, stderr io.Writer) error {
	f, err := parseResetFlags(args, stderr)
	if err != nil {
		return err
	}
	top, err := loadTopology(f.config, brokerOverrides(f.brokers), false)
	if err != nil {
		return err
	}
	if f.stateDir == "" && top.Settings.State.Store == config.StorePebble {
		f.stateDir = top.Settings.State.Dir
	}
	copts, err := kclient.SecurityOpts(top.Settings.Security)
	if err != nil {
		return err
	}
	adm, cl, err := kclient.NewAdmin(top.Settings.Brokers, copts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()

	plan, err := reset.NewPlan(ctx, adm, top, f.target)
	if err != nil {
		return err
	}
	local := localState(top, f.stateDir)
	if f.format == "table" {
		printResetPlan(stdout, plan, local)
	}
	if !f.dryRun {
		if err := plan.Apply(ctx, adm); err != nil {
			return err
		}
		for _, d := range local {
			if err := os.RemoveAll(d); err != nil {
				return fmt.Errorf("remove local state %s: %w", d, err)
			}
		}
	}
	switch {
	case f.format == "json":
		b, _ := json.Marshal(struct {
			*reset.Plan
			RemoveState []string `json:"remove_state"`
			Applied     bool     `json:"applied"`
		}{plan, local, !f.dryRun})
		fmt.Fprintln(stdout, string(b))
	case f.dryRun:
		fmt.Fprintln(stdout, "dry run: nothing changed")
	default:
		fmt.Fprintf(stdout, "reset: %d input partitions moved to %s, %d topics deleted, %d local state directories removed\n",
			len(plan.Inputs), plan.To, len(plan.Topics), len(local))
	}
	return nil
}

// localState lists the changelogs' state directories below dir that exist.
func localState(top *plan.Plan, dir string) []string {
	if dir == "" {
		return nil
	}
	var local []string
	_, changelogs := top.InternalTopics()
	for _, t := range changelogs {
		d := filepath.Join(dir, t)
		if _, err := os.Stat(d); err == nil {
			local = append(local, d)
		}
	}
	return local
}

func printResetPlan(w io.Writer, plan *reset.Plan, local []string) {
	fmt.Fprintf(w, "reset of group %s to %s\n", plan.Group, plan.To)
	fmt.Fprintln(w, "input offsets:")
	for _, in := range plan.Inputs {
		from := "none"
		if in.From >= 0 {
			from = fmt.Sprint(in.From)
		}
		fmt.Fprintf(w, "  %s[%d]  %s -> %d\n", in.Topic, in.Partition, from, in.To)
	}
	list := func(what string, xs []string) {
		if len(xs) == 0 {
			fmt.Fprintf(w, "%s: none\n", what)
			return
		}
		fmt.Fprintf(w, "%s: %s\n", what, strings.Join(xs, ", "))
	}
	list("delete topics (recreated empty at the next start)", plan.Topics)
	list("delete the group's offsets on", plan.Offsets)
	list("remove local state", local)
}
