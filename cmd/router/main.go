// Command router runs sidestream topologies: run, demo, validate, test,
// topology, plan, version, probe, tail, redrive, reset, completion. It is flags (cli.go,
// read by kong) and one call per subcommand into internal/.
//
// Exit codes: 0 done; 1 the work failed (a topology that does not load,
// a failing test, a demo whose conservation fails, a broker error); 2 the
// command line is wrong (an unknown command or flag, a bad value).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/sidestream/sidestream/internal/cliexit"
)

// version is stamped at build time: -ldflags "-X main.version=...".
var version = "dev"

const description = `A Kafka-native router with side outputs.

A command that reads a topology takes it as FILE, else --config FILE, else SIDESTREAM_CONFIG. Exit codes: 0 done, 1 the work failed, 2 the command line is wrong.`

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// exitCode unwinds realMain when kong exits (after --help, --version, a
// completion).
type exitCode int

// newParser is the kong parser of cli, writing to stdout and stderr.
func newParser(c *cli, stdout, stderr io.Writer) (*kong.Kong, error) {
	return kong.New(c,
		kong.Name("router"),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitCode(code)) }),
		kong.NamedMapper("envbool", envBool{}),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true, WrapUpperBound: 100}),
	)
}

func realMain(args []string, stdout, stderr io.Writer) (code int) {
	// First of all: a SIGTERM during start-up is a clean stop too.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	unsetEmptyEnv()
	parser, err := newParser(&cli{}, stdout, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "router:", err)
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(exitCode)
			if !ok {
				panic(r)
			}
			code = int(c)
		}
	}()
	kongplete.Complete(parser, kongplete.WithPredictors(map[string]complete.Predictor{
		"yaml": complete.PredictOr(complete.PredictFiles("*.yaml"), complete.PredictFiles("*.yml")),
		"file": complete.PredictFiles("*"),
	}))
	if len(args) > 0 && args[0] == "help" {
		args = append(args[1:len(args):len(args)], "--help") // router help [COMMAND]
	}
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") && !isCommand(parser, args[0]) {
		if len(args) > 0 {
			fmt.Fprintf(stderr, "router: unknown command %q\n\n", args[0])
		}
		usage(parser, stderr)
		return 2
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "router %s: %v%s\n", args[0], err, hint(args, err))
		fmt.Fprintf(stderr, "Run 'router %s --help' for its flags.\n", args[0])
		return 2
	}
	return exit(strings.Fields(kctx.Command())[0], kctx.Run(runEnv{ctx: ctx, stdout: stdout, stderr: stderr}), stderr)
}

// exit is the process's exit code for a command's error, whose message it
// prints.
func exit(name string, err error, stderr io.Writer) int {
	var ce cliexit.Error
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ce):
		if ce.Msg != "" {
			fmt.Fprintln(stderr, ce.Msg)
		}
		return ce.Code
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(stderr, ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "router %s: %v\n", name, err)
	return 1
}

func isCommand(parser *kong.Kong, name string) bool {
	return slices.ContainsFunc(parser.Model.Children, func(n *kong.Node) bool { return n.Name == name })
}

// usage prints the commands on w.
func usage(parser *kong.Kong, w io.Writer) {
	parser.Stdout = w
	kctx, err := kong.Trace(parser, nil)
	if err == nil {
		_ = kctx.PrintUsage(false)
	}
}

// hint adds what a parse error alone does not say.
func hint(args []string, err error) string {
	if args[0] == "demo" && strings.Contains(err.Error(), "--brokers") {
		return " (the demo runs its own embedded Kafka: --kafka-port sets its port; --brokers is for router run)"
	}
	return ""
}

// exitError ends the process with a code and an optional message (the
// topotest files' form of cliexit.Error).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// unsetEmptyEnv unsets the SIDESTREAM_* variables set to "": empty is
// unset, as the router has always read them (kong would take "" as a
// value).
func unsetEmptyEnv() {
	for _, kv := range os.Environ() {
		if name, v, _ := strings.Cut(kv, "="); v == "" && strings.HasPrefix(name, "SIDESTREAM_") {
			_ = os.Unsetenv(name)
		}
	}
}

// environ is the process environment (a variable for the tests).
var environ = os.Environ
