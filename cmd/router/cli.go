package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/cliexit"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/demo"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/probe"
	"github.com/sidestream/sidestream/internal/serve"
	"github.com/sidestream/sidestream/internal/topotest"
	"github.com/sidestream/sidestream/internal/validate"
)

// cli is the router's command line: one field per subcommand, each
// command's flags as its struct's fields (kong reads the tags; the help,
// the completion and docs/reference/cli.md come from them).
type cli struct {
	Version versionFlag `name:"version" help:"Print the version and exit (as router version)."`

	Run        runCmd        `cmd:"" help:"Run a topology on your Kafka." kong:"set='listen=:8080',set='txn_timeout=10s',set='log_level=info'"`
	Demo       demoCmd       `cmd:"" help:"Run a topology on an embedded Kafka with a generator (or your records) and check conservation." kong:"set='listen=127.0.0.1:8080',set='txn_timeout=1m',set='log_level=warn'"`
	Validate   validateCmd   `cmd:"" help:"Check topology and topology test files without running them."`
	Test       testCmd       `cmd:"" help:"Run topology tests (inputs, expected outputs per route) on an in-process Kafka."`
	Topology   topologyCmd   `cmd:"" help:"Print the compiled graph of a topology."`
	Plan       planCmd       `cmd:"" help:"Say what a change does to a running topology: each difference live, new state or breaking (exit 1 on a breaking one)."`
	VersionCmd versionCmd    `cmd:"" name:"version" help:"Print the version, VCS revision and Go version."`
	Probe      probeCmd      `cmd:"" help:"Exit 0 once URL answers 2xx (helm test, container health checks)."`
	Tail       tailCmd       `cmd:"" help:"Print a route's records (read_committed)."`
	Redrive    redriveCmd    `cmd:"" help:"Re-inject side records (dirty, late) into a topic, in transactions."`
	Reset      resetCmd      `cmd:"" help:"Reprocess from scratch: move input offsets, delete internal topics and state."`
	Audit      auditCmd      `cmd:"" help:"Compare a route's topic with its Elasticsearch index and MySQL table, key by key (exit 1 on drift)."`
	Completion completionCmd `cmd:"" help:"Print the shell code that completes router's commands and flags."`
}

// runEnv is what every command's Run gets: the context (cancelled by
// SIGINT or SIGTERM) and the output streams.
type runEnv struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

// topologyArg is the topology file of a command that reads one: FILE,
// else --config, else SIDESTREAM_CONFIG.
type topologyArg struct {
	File   string `arg:"" optional:"" name:"file" help:"Topology file (or --config)." predictor:"yaml"`
	Config string `name:"config" placeholder:"FILE" env:"SIDESTREAM_CONFIG" help:"Topology file, when no FILE is given." predictor:"yaml"`
}

// path is the topology file; both FILE and --config (not from
// SIDESTREAM_CONFIG) is a usage error.
func (t topologyArg) path(cmd string) (string, error) {
	switch {
	case t.File != "" && t.Config != "" && t.Config != os.Getenv("SIDESTREAM_CONFIG"):
		return "", cliexit.Usage("router %s: two topology files, FILE %q and --config %q: give one", cmd, t.File, t.Config)
	case t.File != "":
		return t.File, nil
	case t.Config != "":
		return t.Config, nil
	}
	return "", cliexit.Usage("router %s: no topology file: name it (router %s FILE), or give --config FILE or SIDESTREAM_CONFIG", cmd, cmd)
}

// logFlags are the logger's flags; the default level is the command's.
type logFlags struct {
	LogLevel  string `default:"${log_level}" enum:"debug,info,warn,error" env:"SIDESTREAM_LOG_LEVEL" help:"debug, info, warn or error."`
	LogFormat string `default:"text" enum:"text,json" env:"SIDESTREAM_LOG_FORMAT" help:"text or json."`
}

// overrideFlags override the file's settings (and the environment's).
type overrideFlags struct {
	ApplicationID  string `name:"application-id" placeholder:"ID" help:"Application id, overriding the file and SIDESTREAM_APPLICATION_ID."`
	Guarantee      string `placeholder:"GUARANTEE" help:"exactly_once or at_least_once, overriding the file and SIDESTREAM_GUARANTEE."`
	CommitInterval string `help:"Commit interval, overriding the file and SIDESTREAM_COMMIT_INTERVAL." placeholder:"DURATION"`
}

// processFlags are the settings of the router's process.
type processFlags struct {
	Listen             string        `default:"${listen}" env:"SIDESTREAM_LISTEN" help:"HTTP API address."`
	InstanceID         string        `name:"instance-id" placeholder:"NAME" env:"SIDESTREAM_INSTANCE_ID" help:"Unique name of this process in the group (default: the host name)."`
	OwnerURLTemplate   string        `name:"owner-url-template" env:"SIDESTREAM_OWNER_URL_TEMPLATE" placeholder:"URL" help:"How instances reach each other's HTTP API, for the owner URL of a state query answered elsewhere and the web view's cluster view: {instance} and {host} are the owner's instance id and address, e.g. http://{instance}.router-headless:8080."`
	StaticMembership   bool          `type:"envbool" env:"SIDESTREAM_STATIC_MEMBERSHIP" help:"Use the instance id as group.instance.id (the variable takes true or false, 1 or 0)."`
	Workers            int           `placeholder:"N" help:"Partitions processed in parallel (0: GOMAXPROCS)."`
	TransactionTimeout time.Duration `default:"${txn_timeout}" help:"Broker-side transaction timeout."`
	SessionTimeout     time.Duration `help:"Consumer group session timeout: how soon a dead or frozen member's partitions move (0: franz-go's 45s; the broker allows 6s to 30m)."`
}

func (p processFlags) options() serve.Options {
	return serve.Options{
		Listen: p.Listen, InstanceID: p.InstanceID, OwnerURL: p.OwnerURLTemplate, Static: p.StaticMembership,
		Workers: p.Workers, TxnTimeout: p.TransactionTimeout, SessionTimeout: p.SessionTimeout, Build: currentBuild().serve(),
		KgoOpts: testBuildKgoOpts,
	}
}

// testBuildKgoOpts are client options of a test build only (kip848.go,
// build tag sidestream_kip848); a release build has none.
var testBuildKgoOpts []kgo.Opt

type runCmd struct {
	topologyArg
	Brokers string `placeholder:"BROKERS" help:"Comma-separated brokers, overriding the file and SIDESTREAM_BROKERS."`
	Watch   bool   `type:"envbool" env:"SIDESTREAM_WATCH" help:"Reload the topology when its file's content changes (a mounted ConfigMap), as SIGHUP and POST /reload do."`
	overrideFlags
	processFlags
	logFlags
}

func (c *runCmd) Run(e runEnv) error {
	log, err := serve.NewLogger(e.stderr, c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	warnUnknownEnv(log, environ())
	o := serve.Overrides(c.Brokers, c.ApplicationID, c.Guarantee, c.CommitInterval)
	top, err := topologyFor("run", c.topologyArg, o, false)
	if err != nil {
		return err
	}
	opts := c.options()
	opts.Reload = serve.Reload{File: cmp.Or(c.File, c.Config), Overrides: o, Watch: c.Watch}
	return serve.Run(e.ctx, top, opts, log, metrics.New(), serve.Hooks{})
}

type demoCmd struct {
	File      string        `arg:"" optional:"" name:"file" help:"Topology file (or --config; without both: examples/logs-by-level.yaml, built in)." predictor:"yaml"`
	Config    string        `name:"config" placeholder:"FILE" env:"SIDESTREAM_CONFIG" help:"Topology file, when no FILE is given." predictor:"yaml"`
	Input     []string      `name:"input" sep:"none" placeholder:"[TOPIC=]FILE" help:"Your records instead of the generator's: a file of JSON lines, each line one record's value as it is (no key, no headers); FILE goes to the first input topic, TOPIC=FILE to that input topic. Repeat for more files." predictor:"file"`
	Records   int           `default:"50000" placeholder:"N" help:"Records the generator writes."`
	Rate      float64       `placeholder:"N" help:"Records per second written (0: as fast as possible)."`
	Seed      uint64        `default:"1" help:"Generator seed."`
	Generator string        `default:"auto" enum:"logs,orders,parts,auto" help:"logs, orders, parts (assembly parts), or auto (parts for a topology with an assembly route, orders when the first input topic names orders)."`
	Quiet     bool          `help:"No live summary."`
	Linger    time.Duration `help:"After the verdict, keep the embedded Kafka and the web view (/ui) up this long (Ctrl-C ends it), e.g. to try router tail and redrive on it."`
	KafkaPort int           `placeholder:"PORT" help:"Port of the embedded Kafka on 127.0.0.1 (0: any free port)."`
	overrideFlags
	processFlags
	logFlags
}

func (c *demoCmd) Run(e runEnv) error {
	log, err := serve.NewLogger(e.stderr, c.LogLevel, c.LogFormat)
	if err != nil {
		return err
	}
	path := ""
	if c.File != "" || c.Config != "" {
		if path, err = (topologyArg{File: c.File, Config: c.Config}).path("demo"); err != nil {
			return err
		}
	}
	return demo.Run(e.ctx, demo.Options{
		Config: path, Records: c.Records, Rate: c.Rate, Seed: c.Seed, Quiet: c.Quiet,
		Generator: c.Generator, Linger: c.Linger, KafkaPort: c.KafkaPort, Inputs: c.Input,
		ApplicationID: c.ApplicationID, Guarantee: c.Guarantee, CommitInterval: c.CommitInterval,
		Serve: c.options(), Log: log,
	}, e.stdout, e.stderr)
}

type topologyCmd struct {
	topologyArg
	Format string `default:"json" enum:"json,dot,mermaid" help:"json, dot or mermaid."`
}

type versionCmd struct{}

func (versionCmd) Run(e runEnv) error {
	_, err := io.WriteString(e.stdout, currentBuild().String()+"\n")
	return err
}

// versionFlag is --version: the version, then exit 0.
type versionFlag bool

func (versionFlag) BeforeReset(app *kong.Kong) error {
	fmt.Fprintln(app.Stdout, currentBuild())
	app.Exit(0)
	return nil
}

type testCmd struct {
	Files    []string      `arg:"" optional:"" name:"file" help:"Topology test files; globs allowed." predictor:"yaml"`
	Only     string        `name:"run" placeholder:"REGEXP" help:"Run only the cases whose name matches REGEXP (plain text: the names containing it)."`
	Timeout  time.Duration `default:"2m" help:"Most time one case may take."`
	Verbose  bool          `help:"Print what each route received under each passing case too."`
	Parallel int           `placeholder:"N" help:"Cases run at once, each on its own in-process Kafka (0: the number of CPUs, at least 4)."`
	Format   string        `default:"text" enum:"text,json" help:"text (a line per case, the diff under a failing one) or json (one object, for CI)."`
}

func (c *testCmd) Run(e runEnv) error {
	if len(c.Files) == 0 {
		return cliexit.Usage("router test: name the test files (router test examples/*.test.yaml)")
	}
	o := topotest.Options{Run: c.Only, Timeout: c.Timeout, Verbose: c.Verbose, Parallel: c.Parallel, Format: c.Format}
	failed, err := topotest.Run(e.ctx, c.Files, o, e.stdout, e.stderr)
	switch {
	case err != nil:
		return cliexit.Usage("router test: %v", err)
	case failed:
		return cliexit.Error{Code: 1}
	}
	return nil
}

func (c *topologyCmd) Run(e runEnv) error {
	path, err := c.path("topology")
	if err != nil {
		return err
	}
	cfg, err := config.LoadFile(path)
	var ce *config.ConfigError
	if errors.As(err, &ce) {
		return cliexit.Error{Code: 1, Msg: ce.Error()}
	} else if err != nil {
		return err
	}
	top, err := plan.Compile(cfg, serve.DirOf(path))
	if err != nil {
		return err
	}
	b, err := top.Describe(c.Format)
	if err != nil {
		return cliexit.Usage("%v", err)
	}
	_, err = e.stdout.Write(b)
	return err
}

// topologyFor loads the command's topology file as router run does.
func topologyFor(cmd string, t topologyArg, o config.Overrides, plaintext bool) (*plan.Plan, error) {
	path, err := t.path(cmd)
	if err != nil {
		return nil, err
	}
	return serve.LoadTopology(path, o, plaintext)
}

type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

// completionScripts have the shell ask the router itself (COMP_LINE, read
// by kongplete) for the words that fit; {bin} is the router's path.
var completionScripts = map[string]string{
	"bash": "complete -o default -C {bin} router\n",
	"zsh":  "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C {bin} router\n",
	"fish": "function __complete_router\n    set -lx COMP_LINE (commandline -cp)\n    test -z (commandline -ct)\n    and set COMP_LINE \"$COMP_LINE \"\n    {bin}\nend\ncomplete -f -c router -a \"(__complete_router)\"\n",
}

func (c *completionCmd) Run(e runEnv) error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	_, err = io.WriteString(e.stdout, strings.ReplaceAll(completionScripts[c.Shell], "{bin}", bin))
	return err
}

// envBool is the mapper of the boolean flags a SIDESTREAM_* variable can
// set: the values strconv.ParseBool takes (1, t, true, TRUE, 0, f ...).
type envBool struct{}

func (envBool) IsBool() bool { return true }

func (envBool) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	if ctx.Scan.Peek().Type != kong.FlagValueToken {
		target.SetBool(true) // --flag alone
		return nil
	}
	v := strings.TrimSpace(ctx.Scan.Pop().String())
	if v == "" {
		target.SetBool(false) // an empty variable is unset
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%q: use true or false (or 1, 0, t, f)", v)
	}
	target.SetBool(b)
	return nil
}

type validateCmd struct {
	Files    []string `arg:"" optional:"" name:"file" help:"Topology or topology test files; globs allowed." predictor:"yaml"`
	Config   string   `name:"config" placeholder:"FILE" help:"A topology file, before the FILEs (without both: SIDESTREAM_CONFIG)." predictor:"yaml"`
	Format   string   `default:"text" enum:"text,json" help:"text (FILE:LINE:COL: message) or json (one object, for CI)."`
	Registry string   `placeholder:"URL" help:"Schema registry to check the avro, protobuf and json_schema inputs' fields against (default: SIDESTREAM_SCHEMA_REGISTRY_URL, then the file's schema_registry.url)."`
	Offline  bool     `help:"Never reach out: the registry-backed inputs' fields are not checked against their schemas (a note says so). Without it, validate asks the registry named by --registry, the environment or the file."`
}

func (c *validateCmd) Run(e runEnv) error {
	if c.Offline && c.Registry != "" {
		return cliexit.Usage("router validate: --offline and --registry: choose one")
	}
	patterns := c.Files
	if c.Config != "" {
		patterns = append([]string{c.Config}, patterns...)
	}
	if env := os.Getenv("SIDESTREAM_CONFIG"); len(patterns) == 0 && env != "" {
		patterns = []string{env}
	}
	if len(patterns) == 0 {
		return cliexit.Usage("router validate: name the topology files (router validate FILE...), or give --config FILE or SIDESTREAM_CONFIG")
	}
	results, ok, err := validate.Files(patterns, validate.Options{Registry: c.Registry, Offline: c.Offline, TestFile: checkTestFile})
	if err != nil {
		return err
	}
	if err := validate.Print(e.stdout, c.Format, ok, results); err != nil {
		return err
	}
	if !ok {
		return cliexit.Error{Code: 1}
	}
	return nil
}

type probeCmd struct {
	URL        string        `arg:"" name:"url" help:"An http:// or https:// URL."`
	Timeout    time.Duration `default:"60s" help:"Give up after this long; 0: one attempt."`
	Interval   time.Duration `default:"1s" help:"Wait between attempts."`
	CAFile     string        `placeholder:"FILE" help:"PEM CA bundle for an https URL (default: the system roots)." predictor:"file"`
	ServerName string        `placeholder:"NAME" help:"The name the server's certificate must carry (default: the URL's host)."`
}

func (c *probeCmd) Run(e runEnv) error {
	return probe.Run(e.ctx, c.URL, probe.Options{Timeout: c.Timeout, Interval: c.Interval, CAFile: c.CAFile, ServerName: c.ServerName}, e.stdout, e.stderr)
}

// checkTestFile is validate's view of topotest.Check: the topology a test
// file names, its cases, or its problems at their line:col.
func checkTestFile(path string) (string, int, []validate.Problem) {
	tf, err := topotest.Check(path)
	var fe *topotest.FileError
	switch {
	case errors.As(err, &fe):
		probs := make([]validate.Problem, len(fe.Problems))
		for i, p := range fe.Problems {
			probs[i] = validate.Problem(p)
		}
		return "", 0, probs
	case err != nil:
		return "", 0, []validate.Problem{{Message: err.Error()}}
	}
	return tf.Topology, len(tf.Tests), nil
}
