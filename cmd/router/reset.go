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

	"github.com/sidestream/sidestream/kclient"
	"github.com/sidestream/sidestream/reset"
	"github.com/sidestream/sidestream/topology"
)

// cmdReset resets an application for reprocessing: input offsets moved,
// repartition and changelog topics deleted (reset.NewPlan), and the
// local pebble state of those changelogs removed.
func cmdReset(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router reset", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		config   = fs.String("config", os.Getenv("SIDESTREAM_CONFIG"), "topology file (env SIDESTREAM_CONFIG)")
		brokers  = fs.String("brokers", "", "comma-separated brokers, overriding the file and SIDESTREAM_BROKERS")
		to       = fs.String("to", "earliest", "where the input offsets go: earliest, latest, or an RFC 3339 time (the first record at or after it)")
		stateDir = fs.String("state-dir", "", "local pebble state to remove (the changelogs' directories below it); default state.dir when state.store is pebble")
		dryRun   = fs.Bool("dry-run", false, "print the plan; change nothing")
		format   = fs.String("format", "table", "how to print the plan: table or json")
		timeout  = fs.Duration("timeout", 2*time.Minute, "give up after this long")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return exitError{code: 2, msg: "router reset: " + fmt.Sprintf(format, a...)}
	}
	var target reset.To
	switch *to {
	case "earliest":
	case "latest":
		target.Latest = true
	default:
		at, err := time.Parse(time.RFC3339, *to)
		if err != nil {
			return bad("--to %q: use earliest, latest or an RFC 3339 time such as 2026-12-01T00:00:00Z", *to)
		}
		target.At = at
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q (flags only)", fs.Arg(0))
	case *format != "table" && *format != "json":
		return bad("--format %q: use table or json", *format)
	case *timeout <= 0:
		return bad("--timeout must be positive")
	}
	top, err := loadTopology(*config, brokerOverrides(*brokers), false)
	if err != nil {
		return err
	}
	if *stateDir == "" && top.Config.State.Store == topology.StorePebble {
		*stateDir = top.Config.State.Dir
	}
	copts, err := kclient.SecurityOpts(top.Config.Security)
	if err != nil {
		return err
	}
	adm, cl, err := kclient.NewAdmin(top.Config.Brokers, copts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	plan, err := reset.NewPlan(ctx, adm, top, target)
	if err != nil {
		return err
	}
	var local []string // the changelogs' state directories that exist
	if *stateDir != "" {
		_, changelogs := top.InternalTopics()
		for _, t := range changelogs {
			d := filepath.Join(*stateDir, t)
			if _, err := os.Stat(d); err == nil {
				local = append(local, d)
			}
		}
	}
	if *format == "table" {
		printResetPlan(stdout, plan, local)
	}
	if !*dryRun {
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
	case *format == "json":
		b, _ := json.Marshal(struct {
			*reset.Plan
			RemoveState []string `json:"remove_state"`
			Applied     bool     `json:"applied"`
		}{plan, local, !*dryRun})
		fmt.Fprintln(stdout, string(b))
	case *dryRun:
		fmt.Fprintln(stdout, "dry run: nothing changed")
	default:
		fmt.Fprintf(stdout, "reset: %d input partitions moved to %s, %d topics deleted, %d local state directories removed\n",
			len(plan.Inputs), plan.To, len(plan.Topics), len(local))
	}
	return nil
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
