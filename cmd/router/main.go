// Command router runs sidestream topologies: run, demo, validate, test,
// topology, plan, version, tail, redrive, reset, probe.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// version is stamped at build time: -ldflags "-X main.version=...".
var version = "dev"

const usage = `router: a Kafka-native router with side outputs

Usage:
  router run      --config FILE [--brokers B] [--listen ADDR] ...   run a topology
  router demo     [--records N] [--rate R] [--config FILE]          in-process Kafka, generator, live summary
  router validate [--format json] FILE...                           check topologies offline (several files, globs)
  router test     FILE...                                           run topology tests (inputs, expected outputs per route) on an in-process Kafka
  router topology --config FILE [--format json|dot|mermaid]         print the compiled graph
  router plan     [--format json] OLD.yaml NEW.yaml                 what a change does to a running topology (live, new state, breaking)
  router version                                                    print the version, VCS revision and Go version (also --version)
  router probe    [--timeout 60s] [--ca-file FILE] URL              exit 0 once URL answers 2xx (helm test, container health checks)
  router tail     --config FILE --route NAME [--follow] ...         print a route's records (read_committed)
  router redrive  --config FILE --from ROUTE --to TOPIC ...         re-inject side records (dirty, late) in transactions
  router reset    --config FILE [--to earliest|latest|TIME] ...     reprocess: move input offsets, delete internal topics and state
  router audit    --topic T --es-url U --mysql-dsn D [--format json] compare a route's topic with its sinks' stores (exit 1 on drift)

Run 'router COMMAND --help' for a command's flags.
`

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmds := map[string]func([]string, io.Writer, io.Writer) error{
		"run":      cmdRun,
		"demo":     cmdDemo,
		"validate": cmdValidate,
		"test":     cmdTest,
		"topology": cmdTopology,
		"plan":     cmdPlan,
		"tail":     cmdTail,
		"redrive":  cmdRedrive,
		"reset":    cmdReset,
		"audit":    cmdAudit,
		"version":  cmdVersion,
		"probe":    cmdProbe,
	}
	name := args[0]
	if name == "--version" || name == "-version" {
		name = "version"
	}
	if name == "-h" || name == "--help" || name == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := cmds[name]
	if !ok {
		fmt.Fprintf(stderr, "router: unknown command %q\n\n%s", name, usage)
		return 2
	}
	err := cmd(args[1:], stdout, stderr)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(stderr, ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "router %s: %v\n", name, err)
	return 1
}

func cmdVersion(args []string, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("router version: unexpected argument %q", args[0])}
	}
	fmt.Fprintln(stdout, currentBuild())
	return nil
}

// exitError ends the process with a code and an optional message.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, o)), nil
	}
	return nil, fmt.Errorf("log format %q: use text or json", format)
}

// envOr returns the environment variable's value, or def.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
