package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/show"
	"github.com/sidestream/sidestream/internal/sideroute"
)

// redriveFlags are router redrive's flags.
type redriveFlags struct {
	config, from, to, filter, transform, runID, brokers, format string
	dryRun, quiet                                               bool
	limit, maxRedr, txnRecs                                     int
}

func parseRedriveFlags(args []string, stderr io.Writer) (*redriveFlags, error) {
	fs := flag.NewFlagSet("router redrive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &redriveFlags{}
	fs.StringVar(&f.config, "config", os.Getenv("SIDESTREAM_CONFIG"), "topology file (env SIDESTREAM_CONFIG)")
	fs.StringVar(&f.from, "from", "", "side route to read: dirty, WINDOW.late (late when there is one), or any route")
	fs.StringVar(&f.to, "to", "", "topic to write to, typically an input topic (must exist)")
	fs.StringVar(&f.filter, "filter", "", `predicate choosing the records (expr-lang, as in the topology), e.g. _reason == "schema_violation"`)
	fs.StringVar(&f.transform, "transform", "", "expression giving the new value (a string as is, an object or list as JSON)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print what would be sent and the counts; write nothing")
	fs.IntVar(&f.limit, "limit", 0, "redrive at most this many records (0: all)")
	fs.IntVar(&f.maxRedr, "max-redrives", 3, "refuse records already redriven this many times (0: no limit)")
	fs.IntVar(&f.txnRecs, "txn-records", 500, "records per transaction")
	fs.StringVar(&f.runID, "run-id", "", "name of this run in the headers and the ledger (default redrive-UTC time)")
	fs.StringVar(&f.brokers, "brokers", "", "comma-separated brokers, overriding the file and SIDESTREAM_BROKERS")
	fs.StringVar(&f.format, "format", "table", "how --dry-run prints records: table or json")
	fs.BoolVar(&f.quiet, "quiet", false, "print only the summary")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, badRedrive("unexpected argument %q (flags only)", fs.Arg(0))
	case f.from == "":
		return nil, badRedrive("--from is required (the side route to redrive, e.g. dirty)")
	case f.to == "":
		return nil, badRedrive("--to is required (the topic to write to, e.g. an input topic)")
	case f.limit < 0:
		return nil, badRedrive("--limit must not be negative")
	case f.maxRedr < 0:
		return nil, badRedrive("--max-redrives must not be negative")
	case f.txnRecs < 1:
		return nil, badRedrive("--txn-records must be at least 1")
	case f.format != "table" && f.format != "json":
		return nil, badRedrive("--format %q: use table or json", f.format)
	}
	if f.runID == "" {
		f.runID = "redrive-" + time.Now().UTC().Format("20060102T150405Z")
	}
	return f, nil
}

func badRedrive(format string, a ...any) error {
	return exitError{code: 2, msg: "router redrive: " + fmt.Sprintf(format, a...)}
}

func cmdRedrive(args []string, stdout, stderr io.Writer) error {
	f, err := parseRedriveFlags(args, stderr)
	if err != nil {
		return err
	}
	top, err := loadTopology(f.config, brokerOverrides(f.brokers), false)
	if err != nil {
		return err
	}
	target, err := sideroute.Resolve(top, f.from)
	if err != nil {
		return badRedrive("--from: %v", err)
	}
	var fexpr, texpr *config.Expr
	if f.filter != "" {
		if fexpr, err = config.CompileExpr(f.filter, true); err != nil {
			return badRedrive("--filter: %v", err)
		}
	}
	if f.transform != "" {
		if texpr, err = config.CompileExpr(f.transform, false); err != nil {
			return badRedrive("--transform: %v", err)
		}
	}
	rd, err := newRedrive(top, target, f, fexpr, texpr)
	if err != nil {
		return err
	}
	rd.OnRecord = f.onRecord(top, stdout, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c, err := rd.Run(ctx)
	b, _ := json.Marshal(c)
	fmt.Fprintln(stdout, string(b))
	if err != nil {
		if strings.HasPrefix(err.Error(), "--to") {
			return exitError{code: 2, msg: "router redrive: " + err.Error()}
		}
		return fmt.Errorf("%w (committed transactions stay; run again to continue: redriven records are skipped)", err)
	}
	if c.AlreadyRedriven > 0 {
		fmt.Fprintf(stderr, "redrive: %d records refused: already redriven (ledger %s)\n", c.AlreadyRedriven, c.Ledger)
	}
	if c.ExprErrors > 0 {
		fmt.Fprintf(stderr, "redrive: %d records were not redriven because an expression failed on them; they stay on %s\n", c.ExprErrors, target.Topic)
	}
	return nil
}

// newRedrive is the redrive the flags ask for, its clients built as the
// router's are: the security section on every one, and the client
// section's fetch side on those that read (the side route, the ledger)
// and its produce side (compression, metadata minimum age, buffers) on
// the producer.
func newRedrive(top *plan.Plan, target sideroute.Target, f *redriveFlags, filter, transform *config.Expr) (sideroute.Redrive, error) {
	copts, err := kclient.SecurityOpts(top.Settings.Security)
	if err != nil {
		return sideroute.Redrive{}, err
	}
	return sideroute.Redrive{
		Brokers: top.Settings.Brokers, ClientOpts: copts, Topology: top,
		ReadOpts: kclient.ConsumerOpts(top.Settings.Client), ProduceOpts: kclient.ProducerOpts(top.Settings.Client),
		From: target, To: f.to, Filter: filter, Transform: transform,
		DryRun: f.dryRun, Limit: f.limit, MaxRedrives: f.maxRedr, TxnRecords: f.txnRecs, RunID: f.runID,
	}, nil
}

// onRecord prints what a dry run would send, and the first 20 records not
// redriven with why (refusals and expression errors: the records stay
// where they are, and a person should know which and why).
func (f *redriveFlags) onRecord(top *plan.Plan, stdout, stderr io.Writer) func(r, out *kgo.Record, outcome, detail string) {
	p := tailPrinter{w: stdout, top: top, f: tailFlags{format: f.format, maxValue: 2048}, planned: true}
	notes := 0
	return func(r, out *kgo.Record, outcome, detail string) {
		if f.quiet {
			return
		}
		if f.dryRun && out != nil {
			if f.format == "table" {
				fmt.Fprintf(stdout, "would send %s:\n", sideroute.Origin(r))
			}
			_ = p.print(out)
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
