package main

import (
	"encoding/json"
	"fmt"

	"github.com/sidestream/sidestream/internal/cliexit"
	"github.com/sidestream/sidestream/internal/plan"
)

type planCmd struct {
	Old    string `arg:"" name:"old" help:"The running topology." predictor:"yaml"`
	New    string `arg:"" name:"new" help:"The new topology." predictor:"yaml"`
	Format string `default:"text" enum:"text,json" help:"text, or json (one object, for CI)."`
}

// Run is `router plan OLD NEW`: every difference between two topologies
// with its class (live, new state, breaking) and, for a breaking one, the
// remedies. Exit 0: nothing needs a remedy; 1: a breaking change; 2: a
// file does not load. Offline: nothing is dialled.
func (c *planCmd) Run(e runEnv) error {
	oldPath, newPath, stdout := c.Old, c.New, e.stdout
	old, err := plan.Open(oldPath)
	if err != nil {
		return cliexit.Error{Code: 2, Msg: err.Error()}
	}
	next, err := plan.Open(newPath)
	if err != nil {
		return cliexit.Error{Code: 2, Msg: err.Error()}
	}
	changes := plan.Diff(old, next)
	remedies := plan.Remedies(changes, newPath, next.Settings.ApplicationID)
	sum := plan.Summary(changes)
	if c.Format == "json" {
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
		return cliexit.Error{Code: 1}
	}
	return nil
}
