package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/sidestream/sidestream/internal/plan"
)

// cmdPlan is `router plan OLD NEW`: every difference between two
// topologies with its class (live, new state, breaking) and, for a
// breaking one, the remedies. Exit 0: nothing needs a remedy; 1: a
// breaking change; 2: a file does not load. Offline: nothing is dialled.
func cmdPlan(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: router plan [--format text|json] OLD.yaml NEW.yaml")
		fs.PrintDefaults()
	}
	format := fs.String("format", "text", "text, or json (one object, for CI)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return exitError{code: 2, msg: "router plan: give the running topology and the new one: OLD.yaml NEW.yaml"}
	}
	if *format != "text" && *format != "json" {
		return exitError{code: 2, msg: fmt.Sprintf("router plan: --format %q: use text or json", *format)}
	}
	oldPath, newPath := fs.Arg(0), fs.Arg(1)
	old, err := plan.Open(oldPath)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	next, err := plan.Open(newPath)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	changes := plan.Diff(old, next)
	remedies := plan.Remedies(changes, newPath, next.Settings.ApplicationID)
	sum := plan.Summary(changes)
	if *format == "json" {
		if changes == nil {
			changes = []plan.Change{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"changes": changes, "summary": sum, "remedies": remedies,
			"old_version": old.Version, "new_version": next.Version}); err != nil {
			return err
		}
	} else {
		fmt.Fprint(stdout, plan.Render(changes, remedies))
	}
	if sum[plan.Breaking] > 0 {
		return exitError{code: 1}
	}
	return nil
}
