package reset

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sidestream/sidestream/internal/plan"
)

// LocalState lists the on-disk state directories below dir (state.dir of
// a pebble store) that the reset removes: those of every changelog of
// top, or for a route reset those of the changelog topics it deletes.
func (p *Plan) LocalState(top *plan.Plan, dir string) []string {
	if dir == "" {
		return nil
	}
	_, changelogs := top.InternalTopics()
	if p.Route != "" {
		changelogs = nil
		for _, t := range p.Topics {
			if strings.HasSuffix(t, "-changelog") {
				changelogs = append(changelogs, t)
			}
		}
	}
	var local []string
	for _, t := range changelogs {
		d := filepath.Join(dir, t)
		if _, err := os.Stat(d); err == nil {
			local = append(local, d)
		}
	}
	return local
}

// Print writes the plan for people: what moves, what is deleted.
func (p *Plan) Print(w io.Writer, local []string) {
	if p.Route != "" {
		fmt.Fprintf(w, "reset of route %s in group %s (input offsets and the other routes unchanged)\n", p.Route, p.Group)
	} else {
		fmt.Fprintf(w, "reset of group %s to %s\n", p.Group, p.To)
		fmt.Fprintln(w, "input offsets:")
	}
	for _, in := range p.Inputs {
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
	list("delete topics (recreated empty at the next start)", p.Topics)
	list("delete the group's offsets on", p.Offsets)
	list("remove local state", local)
}

// PrintDone writes the outcome: the plan as JSON (format json), or a
// line saying what was done (or that nothing was, dryRun).
func (p *Plan) PrintDone(w io.Writer, format string, dryRun bool, local []string) {
	switch {
	case format == "json":
		b, _ := json.Marshal(struct {
			*Plan
			RemoveState []string `json:"remove_state"`
			Applied     bool     `json:"applied"`
		}{p, local, !dryRun})
		fmt.Fprintln(w, string(b))
	case dryRun:
		fmt.Fprintln(w, "dry run: nothing changed")
	case p.Route != "":
		fmt.Fprintf(w, "reset: route %s: %d topics deleted, the group's offsets on %d deleted, %d local state directories removed\n",
			p.Route, len(p.Topics), len(p.Offsets), len(local))
	default:
		fmt.Fprintf(w, "reset: %d input partitions moved to %s, %d topics deleted, %d local state directories removed\n",
			len(p.Inputs), p.To, len(p.Topics), len(local))
	}
}
