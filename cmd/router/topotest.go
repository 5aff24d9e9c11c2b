package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/sidestream/sidestream/internal/topotest"
)

func cmdTest(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: router test [--run REGEXP] [--verbose] [--parallel N] [--format text|json] FILE... (topology test files; globs allowed)")
		fs.PrintDefaults()
	}
	only := fs.String("run", "", "run only the cases whose name matches this regular expression")
	timeout := fs.Duration("timeout", 2*time.Minute, "most time one case may take")
	verbose := fs.Bool("verbose", false, "print what each route received under each passing case too")
	parallel := fs.Int("parallel", 0, "cases run at once, each on its own in-process Kafka (default: the number of CPUs, at least 4)")
	format := fs.String("format", "text", "text (a line per case, the diff under a failing one) or json (one object, for CI)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	failed, err := topotest.Run(context.Background(), fs.Args(), topotest.Options{Run: *only, Timeout: *timeout, Verbose: *verbose, Format: *format, Parallel: *parallel}, stdout, stderr)
	switch {
	case err != nil:
		return exitError{code: 2, msg: "router test: " + err.Error()}
	case failed:
		return exitError{code: 1}
	}
	return nil
}
