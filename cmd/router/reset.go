package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/reset"
	"github.com/sidestream/sidestream/internal/serve"
)

// resetCmd resets an application for reprocessing: input offsets moved,
// repartition and changelog topics deleted (reset.NewPlan), and the
// local pebble state of those changelogs removed; or with --route one
// stateful route alone (reset.NewRoutePlan).
type resetCmd struct {
	topologyArg
	Brokers  string        `placeholder:"BROKERS" help:"Comma-separated brokers, overriding the file and SIDESTREAM_BROKERS."`
	To       string        `default:"earliest" placeholder:"earliest|latest|TIME" help:"Where the input offsets go: earliest, latest, or an RFC 3339 time (the first record at or after it)."`
	StateDir string        `placeholder:"DIR" help:"Local pebble state to remove (the changelogs' directories below it); default state.dir when state.store is pebble."`
	Route    string        `placeholder:"NAME" help:"Reset one window or assembly route only: its state, changelog and repartition topics and the group's offsets on them; input offsets stay."`
	Stale    bool          `help:"With --route: delete only the route's topics of its other state versions (left by a state_version change), keeping its current state."`
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

	var plan *reset.Plan
	switch {
	case f.Route != "":
		plan, err = reset.NewRoutePlan(ctx, adm, top, f.Route, f.Stale)
	case f.Stale:
		return exitError{code: 2, msg: "router reset: --stale needs --route NAME"}
	default:
		plan, err = reset.NewPlan(ctx, adm, top, to)
	}
	if err != nil {
		return err
	}
	local := plan.LocalState(top, f.StateDir)
	if f.Format == "table" {
		plan.Print(e.stdout, local)
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
	plan.PrintDone(e.stdout, f.Format, f.DryRun, local)
	return nil
}
