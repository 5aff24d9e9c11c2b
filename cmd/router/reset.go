package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/reset"
	"github.com/sidestream/sidestream/internal/serve"
)

// resetCmd resets an application for reprocessing: input offsets moved,
// repartition and changelog topics deleted (reset.NewPlan), and the
// local pebble state of those changelogs removed.
type resetCmd struct {
	topologyArg
	Brokers  string        `placeholder:"BROKERS" help:"Comma-separated brokers, overriding the file and SIDESTREAM_BROKERS."`
	To       string        `default:"earliest" placeholder:"earliest|latest|TIME" help:"Where the input offsets go: earliest, latest, or an RFC 3339 time (the first record at or after it)."`
	StateDir string        `placeholder:"DIR" help:"Local pebble state to remove (the changelogs' directories below it); default state.dir when state.store is pebble."`
	DryRun   bool          `help:"Print the plan; change nothing."`
	Format   string        `default:"table" enum:"table,json" help:"How to print the plan: table or json."`
	Timeout  time.Duration `default:"2m" help:"Give up after this long."`
}

func (f *resetCmd) target() (reset.To, error) {
	switch f.To {
	case "earliest":
		return reset.To{}, nil
	case "latest":
		return reset.To{Latest: true}, nil
	}
	at, err := time.Parse(time.RFC3339, f.To)
	if err != nil {
		return reset.To{}, exitError{code: 2, msg: fmt.Sprintf("router reset: --to %q: use earliest, latest or an RFC 3339 time such as 2026-12-01T00:00:00Z", f.To)}
	}
	return reset.To{At: at}, nil
}

func (f *resetCmd) Run(e runEnv) error {
	to, err := f.target()
	if err != nil {
		return err
	}
	if f.Timeout <= 0 {
		return exitError{code: 2, msg: "router reset: --timeout must be positive"}
	}
	top, err := topologyFor("reset", f.topologyArg, serve.Overrides(f.Brokers, "", "", ""), false)
	if err != nil {
		return err
	}
	if f.StateDir == "" && top.Settings.State.Store == config.StorePebble {
		f.StateDir = top.Settings.State.Dir
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
	ctx, cancel := context.WithTimeout(e.ctx, f.Timeout)
	defer cancel()

	plan, err := reset.NewPlan(ctx, adm, top, to)
	if err != nil {
		return err
	}
	local := localState(top, f.StateDir)
	if f.Format == "table" {
		printResetPlan(e.stdout, plan, local)
	}
	if !f.DryRun {
		if err := plan.Apply(ctx, adm); err != nil {
			return err
		}
		for _, d := range local {
			if err := os.RemoveAll(d); err != nil {
				return fmt.Errorf("remove local state %s: %w", d, err)
			}
		}
	}
	printResetDone(e.stdout, f.Format, f.DryRun, plan, local)
	return nil
}

func printResetDone(w io.Writer, format string, dryRun bool, plan *reset.Plan, local []string) {
	switch {
	case format == "json":
		b, _ := json.Marshal(struct {
			*reset.Plan
			RemoveState []string `json:"remove_state"`
			Applied     bool     `json:"applied"`
		}{plan, local, !dryRun})
		fmt.Fprintln(w, string(b))
	case dryRun:
		fmt.Fprintln(w, "dry run: nothing changed")
	default:
		fmt.Fprintf(w, "reset: %d input partitions moved to %s, %d topics deleted, %d local state directories removed\n",
			len(plan.Inputs), plan.To, len(plan.Topics), len(local))
	}
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
