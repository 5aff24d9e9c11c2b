package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/serve"
	"github.com/sidestream/sidestream/internal/show"
	"github.com/sidestream/sidestream/internal/sideroute"
)

type redriveCmd struct {
	topologyArg
	From        string `help:"Side route to read: dirty, WINDOW.late (late when there is one), or any route." placeholder:"ROUTE"`
	To          string `help:"Topic to write to, typically an input topic (must exist)." placeholder:"TOPIC"`
	Filter      string `placeholder:"EXPR" help:"Predicate choosing the records (expr-lang, as in the topology), e.g. _reason == \"schema_violation\"."`
	Transform   string `placeholder:"EXPR" help:"Expression giving the new value (a string as is, an object or list as JSON)."`
	DryRun      bool   `help:"Print what would be sent and the counts (would_redrive instead of redriven); write nothing."`
	Limit       int    `placeholder:"N" help:"Redrive at most N records (0: all)."`
	MaxRedrives int    `default:"3" placeholder:"N" help:"Refuse records already redriven N times (0: no limit)."`
	TxnRecords  int    `name:"txn-records" default:"500" placeholder:"N" help:"Records per transaction."`
	RunID       string `name:"run-id" placeholder:"NAME" help:"Name of this run in the headers and the ledger (default redrive-UTC time)."`
	Brokers     string `placeholder:"BROKERS" help:"Comma-separated brokers, overriding the file and SIDESTREAM_BROKERS."`
	Format      string `default:"table" enum:"table,json" help:"How --dry-run prints records: table or json."`
	Quiet       bool   `help:"Print only the summary."`
}

func (f *redriveCmd) check() error {
	switch {
	case f.From == "":
		return badRedrive("--from is required (the side route to redrive, e.g. dirty)")
	case f.To == "":
		return badRedrive("--to is required (the topic to write to, e.g. an input topic)")
	case f.Limit < 0:
		return badRedrive("--limit must not be negative")
	case f.MaxRedrives < 0:
		return badRedrive("--max-redrives must not be negative")
	case f.TxnRecords < 1:
		return badRedrive("--txn-records must be at least 1")
	}
	if f.RunID == "" {
		f.RunID = "redrive-" + time.Now().UTC().Format("20060102T150405Z")
	}
	return nil
}

func badRedrive(format string, a ...any) error {
	return exitError{code: 2, msg: "router redrive: " + fmt.Sprintf(format, a...)}
}

func (f *redriveCmd) Run(e runEnv) error {
	if _, err := f.path("redrive"); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	top, err := topologyFor("redrive", f.topologyArg, serve.Overrides(f.Brokers, "", "", ""), false)
	if err != nil {
		return err
	}
	target, err := sideroute.Resolve(top, f.From)
	if err != nil {
		return badRedrive("--from: %v", err)
	}
	var fexpr, texpr *config.Expr
	if f.Filter != "" {
		if fexpr, err = config.CompileExpr(f.Filter, true); err != nil {
			return badRedrive("--filter: %v", err)
		}
	}
	if f.Transform != "" {
		if texpr, err = config.CompileExpr(f.Transform, false); err != nil {
			return badRedrive("--transform: %v", err)
		}
	}
	rd, err := newRedrive(top, target, f, fexpr, texpr)
	if err != nil {
		return err
	}
	rd.OnRecord = f.onRecord(top, e.stdout, e.stderr)
	c, err := rd.Run(e.ctx)
	fmt.Fprintln(e.stdout, string(countsJSON(c)))
	if err != nil {
		if strings.HasPrefix(err.Error(), "--to") {
			return exitError{code: 2, msg: "router redrive: " + err.Error()}
		}
		return fmt.Errorf("%w (committed transactions stay; run again to continue: redriven records are skipped)", err)
	}
	if c.AlreadyRedriven > 0 {
		fmt.Fprintf(e.stderr, "redrive: %d records refused: already redriven (ledger %s)\n", c.AlreadyRedriven, c.Ledger)
	}
	if c.ExprErrors > 0 {
		fmt.Fprintf(e.stderr, "redrive: %d records were not redriven because an expression failed on them; they stay on %s\n", c.ExprErrors, target.Topic)
	}
	return nil
}

// countsJSON is the summary line: a dry run says would_redrive, for it
// redrove nothing.
func countsJSON(c sideroute.Counts) []byte {
	b, _ := json.Marshal(c)
	if !c.DryRun {
		return b
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	m["would_redrive"] = m["redriven"]
	delete(m, "redriven")
	out, _ := json.Marshal(m)
	return out
}

// newRedrive is the redrive the flags ask for, its clients built as the
// router's are: the security section on every one, and the client
// section's fetch side on those that read (the side route, the ledger)
// and its produce side (compression, metadata minimum age, buffers) on
// the producer.
func newRedrive(top *plan.Plan, target sideroute.Target, f *redriveCmd, filter, transform *config.Expr) (sideroute.Redrive, error) {
	copts, err := kclient.SecurityOpts(top.Settings.Security)
	if err != nil {
		return sideroute.Redrive{}, err
	}
	return sideroute.Redrive{
		Brokers: top.Settings.Brokers, ClientOpts: copts, Topology: top,
		ReadOpts: kclient.ConsumerOpts(top.Settings.Client), ProduceOpts: kclient.ProducerOpts(top.Settings.Client),
		From: target, To: f.To, Filter: filter, Transform: transform,
		DryRun: f.DryRun, Limit: f.Limit, MaxRedrives: f.MaxRedrives, TxnRecords: f.TxnRecords, RunID: f.RunID,
	}, nil
}

// onRecord prints what a dry run would send, and the first 20 records not
// redriven with why (refusals and expression errors: the records stay
// where they are, and a person should know which and why).
func (f *redriveCmd) onRecord(top *plan.Plan, stdout, stderr io.Writer) func(r, out *kgo.Record, outcome, detail string) {
	p := sideroute.Printer{W: stdout, Plan: top, Format: f.Format, MaxValue: 2048, Planned: true}
	notes := 0
	return func(r, out *kgo.Record, outcome, detail string) {
		if f.Quiet {
			return
		}
		if f.DryRun && out != nil {
			if f.Format == "table" {
				fmt.Fprintf(stdout, "would send %s:\n", sideroute.Origin(r))
			}
			_ = p.Print(out)
			return
		}
		switch outcome {
		case sideroute.OutcomeRedriven, sideroute.OutcomeFilteredOut, sideroute.OutcomeAlreadyRedriven:
			return // counted; refusals by the ledger are summed up below
		}
		if notes++; notes <= 20 {
			fmt.Fprintf(stderr, "redrive: %s %s key=%s: %s\n", outcome, sideroute.Origin(r), show.Key(r.Key, 64), show.Escape(detail))
		} else if notes == 21 {
			fmt.Fprintln(stderr, "redrive: more records not redriven; see the counts")
		}
	}
}
