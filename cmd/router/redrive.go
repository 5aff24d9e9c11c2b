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

	"github.com/sidestream/sidestream/internal/show"
	"github.com/sidestream/sidestream/kclient"
	"github.com/sidestream/sidestream/sideroute"
	"github.com/sidestream/sidestream/topology"
)

func cmdRedrive(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router redrive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		config    = fs.String("config", os.Getenv("SIDESTREAM_CONFIG"), "topology file (env SIDESTREAM_CONFIG)")
		from      = fs.String("from", "", "side route to read: dirty, WINDOW.late (late when there is one), or any route")
		to        = fs.String("to", "", "topic to write to, typically an input topic (must exist)")
		filter    = fs.String("filter", "", `predicate choosing the records (expr-lang, as in the topology), e.g. _reason == "schema_violation"`)
		transform = fs.String("transform", "", "expression giving the new value (a string as is, an object or list as JSON)")
		dryRun    = fs.Bool("dry-run", false, "print what would be sent and the counts; write nothing")
		limit     = fs.Int("limit", 0, "redrive at most this many records (0: all)")
		maxRedr   = fs.Int("max-redrives", 3, "refuse records already redriven this many times (0: no limit)")
		txnRecs   = fs.Int("txn-records", 500, "records per transaction")
		runID     = fs.String("run-id", "", "name of this run in the headers and the ledger (default redrive-UTC time)")
		brokers   = fs.String("brokers", "", "comma-separated brokers, overriding the file and SIDESTREAM_BROKERS")
		format    = fs.String("format", "table", "how --dry-run prints records: table or json")
		quiet     = fs.Bool("quiet", false, "print only the summary")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return exitError{code: 2, msg: "router redrive: " + fmt.Sprintf(format, a...)}
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q (flags only)", fs.Arg(0))
	case *from == "":
		return bad("--from is required (the side route to redrive, e.g. dirty)")
	case *to == "":
		return bad("--to is required (the topic to write to, e.g. an input topic)")
	case *limit < 0:
		return bad("--limit must not be negative")
	case *maxRedr < 0:
		return bad("--max-redrives must not be negative")
	case *txnRecs < 1:
		return bad("--txn-records must be at least 1")
	case *format != "table" && *format != "json":
		return bad("--format %q: use table or json", *format)
	}
	top, err := loadTopology(*config, brokerOverrides(*brokers), false)
	if err != nil {
		return err
	}
	target, err := sideroute.Resolve(top, *from)
	if err != nil {
		return bad("--from: %v", err)
	}
	var fexpr, texpr *topology.Expr
	if *filter != "" {
		if fexpr, err = topology.CompileExpr(*filter, true); err != nil {
			return bad("--filter: %v", err)
		}
	}
	if *transform != "" {
		if texpr, err = topology.CompileExpr(*transform, false); err != nil {
			return bad("--transform: %v", err)
		}
	}
	copts, err := kclient.SecurityOpts(top.Config.Security)
	if err != nil {
		return err
	}
	if *runID == "" {
		*runID = "redrive-" + time.Now().UTC().Format("20060102T150405Z")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p := tailPrinter{w: stdout, top: top, f: tailFlags{format: *format, maxValue: 2048}, planned: true}
	notes := 0
	rd := sideroute.Redrive{
		Brokers: top.Config.Brokers, ClientOpts: copts, Topology: top,
		From: target, To: *to, Filter: fexpr, Transform: texpr,
		DryRun: *dryRun, Limit: *limit, MaxRedrives: *maxRedr, TxnRecords: *txnRecs, RunID: *runID,
		OnRecord: func(r, out *kgo.Record, outcome, detail string) {
			if *quiet {
				return
			}
			if *dryRun && out != nil {
				if *format == "table" {
					fmt.Fprintf(stdout, "would send %s:\n", sideroute.Origin(r))
				}
				_ = p.print(out)
				return
			}
			switch outcome {
			case sideroute.OutcomeRedriven, sideroute.OutcomeFilteredOut, sideroute.OutcomeAlreadyRedriven:
				return // counted; refusals by the ledger are summed up below
			}
			// Refusals and expression errors: the records stay where they
			// are, and a person should know which and why.
			if notes++; notes <= 20 {
				fmt.Fprintf(stderr, "redrive: %s %s key=%s: %s\n", outcome, sideroute.Origin(r), show.Key(r.Key, 64), show.Escape(detail))
			} else if notes == 21 {
				fmt.Fprintln(stderr, "redrive: more records not redriven; see the counts")
			}
		},
	}
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
