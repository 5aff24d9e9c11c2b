package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/api"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/live"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/runtime"
)

// runFlags are the flags of `router run` (and, in part, `router demo`).
type runFlags struct {
	config         string
	brokers        string
	appID          string
	guarantee      string
	commitInterval string
	listen         string
	instanceID     string
	ownerURL       string
	static         bool
	workers        int
	txnTimeout     time.Duration
	sessionTimeout time.Duration
	logLevel       string
	logFormat      string
	envErr         error // a SIDESTREAM_* value that does not parse
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", os.Getenv("SIDESTREAM_CONFIG"), "topology file (env SIDESTREAM_CONFIG)")
	fs.StringVar(&f.brokers, "brokers", "", "comma-separated brokers, overriding the file and SIDESTREAM_BROKERS")
	fs.StringVar(&f.appID, "application-id", "", "application id, overriding the file and SIDESTREAM_APPLICATION_ID")
	fs.StringVar(&f.guarantee, "guarantee", "", "exactly_once or at_least_once, overriding the file and SIDESTREAM_GUARANTEE")
	fs.StringVar(&f.commitInterval, "commit-interval", "", "commit interval, overriding the file and SIDESTREAM_COMMIT_INTERVAL")
	fs.StringVar(&f.listen, "listen", envOr("SIDESTREAM_LISTEN", ":8080"), "HTTP API address (env SIDESTREAM_LISTEN)")
	fs.StringVar(&f.instanceID, "instance-id", os.Getenv("SIDESTREAM_INSTANCE_ID"), "unique name of this process in the group (default: host name; env SIDESTREAM_INSTANCE_ID)")
	fs.StringVar(&f.ownerURL, "owner-url-template", os.Getenv("SIDESTREAM_OWNER_URL_TEMPLATE"), "how instances reach each other's HTTP API, for the owner URL of a state query answered elsewhere: {instance} and {host} are the owner's instance id and address, e.g. http://{instance}.router-headless:8080 (env SIDESTREAM_OWNER_URL_TEMPLATE)")
	static, err := envBool("SIDESTREAM_STATIC_MEMBERSHIP", false)
	f.envErr = err
	fs.BoolVar(&f.static, "static-membership", static, "use the instance id as group.instance.id (env SIDESTREAM_STATIC_MEMBERSHIP=true, or 1)")
	fs.IntVar(&f.workers, "workers", 0, "partitions processed in parallel (default GOMAXPROCS)")
	fs.DurationVar(&f.txnTimeout, "transaction-timeout", 10*time.Second, "broker-side transaction timeout")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", 0, "consumer group session timeout: how soon a dead or frozen member's partitions move (default franz-go's 45s; the broker allows 6s to 30m)")
	fs.StringVar(&f.logLevel, "log-level", envOr("SIDESTREAM_LOG_LEVEL", "info"), "debug, info, warn or error (env SIDESTREAM_LOG_LEVEL)")
	fs.StringVar(&f.logFormat, "log-format", envOr("SIDESTREAM_LOG_FORMAT", "text"), "text or json (env SIDESTREAM_LOG_FORMAT)")
}

func (f *runFlags) overrides() config.Overrides {
	o := config.OverridesFromEnv(os.Getenv)
	p := config.Overrides{ApplicationID: f.appID, Guarantee: f.guarantee, CommitInterval: f.commitInterval}
	if f.brokers != "" {
		p.Brokers = strings.Split(f.brokers, ",")
	}
	return o.Merge(p)
}

// loadTopology loads, applies overrides, and compiles. With plaintext
// (the demo's embedded broker) the security settings of the file and the
// environment are dropped, and with a registry URL in o (the demo's
// in-process registry) the file's schema_registry section too.
func loadTopology(path string, o config.Overrides, plaintext bool) (*plan.Plan, error) {
	if path == "" {
		return nil, exitError{code: 2, msg: "--config is required"}
	}
	cfg, err := config.LoadFile(path)
	if err != nil {
		var ce *config.ConfigError
		if errors.As(err, &ce) {
			return nil, exitError{code: 1, msg: ce.Error()}
		}
		return nil, err
	}
	if plaintext {
		cfg.Security = config.Security{Protocol: config.ProtocolPlaintext}
		o.Security = config.SecurityOverrides{}
		if o.Registry.URL != "" {
			// The demo's in-process registry: no auth, no TLS.
			cfg.SchemaRegistry = config.SchemaRegistry{}
		}
	}
	if err := cfg.Apply(o); err != nil {
		return nil, err
	}
	if err := cfg.ApplyAPI(config.APIOverridesFromEnv(os.Getenv)); err != nil {
		return nil, err
	}
	return plan.Compile(cfg, dirOf(path))
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i+1]
	}
	return ""
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	// First of all: a SIGTERM during start-up is a clean stop too.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fs := flag.NewFlagSet("router run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if f.envErr != nil {
		return exitError{code: 2, msg: "router run: " + f.envErr.Error()}
	}
	log, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	warnUnknownEnv(log, os.Environ())
	top, err := loadTopology(f.config, f.overrides(), false)
	if err != nil {
		return err
	}
	return serve(ctx, top, f, log, metrics.New())
}

// serve runs the processor and the HTTP API until ctx ends, then stops
// both within the topology's shutdown timeout.
func serve(ctx context.Context, top *plan.Plan, f runFlags, log *slog.Logger, m *metrics.Metrics) error {
	return serveWith(ctx, top, f, log, m, serveHooks{})
}

// serveHooks let the demo share the web view's state and learn the API's
// address.
type serveHooks struct {
	ui        *live.State       // nil: a fresh one
	listening func(addr string) // called once the API listens
}

// uiView adapts live.State to api.UIState.
type uiView struct{ s *live.State }

func (u uiView) UIView() any { return u.s.View() }

func serveWith(ctx context.Context, top *plan.Plan, f runFlags, log *slog.Logger, m *metrics.Metrics, hooks serveHooks) error {
	build := currentBuild()
	m.SetBuildInfo(build.version, build.revision, build.goVersion)
	ui := hooks.ui
	if ui == nil {
		ui = live.New(top, m, live.Options{})
	}
	proc, err := runtime.New(top, processorOpts(top, f, log, m, ui)...)
	if err != nil {
		return err
	}
	ui.SetTasks(liveTasks(proc), proc.Ready)
	auth, tlsCfg, err := apiSecurity(top.Settings.API, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen for the HTTP API: %w", err)
	}
	addr := ln.Addr()
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	srv := api.Server(f.listen, api.Handler(api.Config{
		Probe:     proc,
		Describer: top,
		Tasks:     taskList{proc},
		Metrics:   m.Handler(),
		UI:        uiView{ui},
		State:     stateReadersFor(proc, top.Settings.API),
		Auth:      auth,
	}))
	if hooks.listening != nil {
		hooks.listening(addr.String())
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	logStarted(log, top, build, addr, tlsCfg != nil, proc.TransactionalID())

	runErr := runUntilStopped(ctx, proc, top.Settings.Shutdown.D(), log)
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	if runErr == nil {
		log.Info("router stopped")
	}
	return runErr
}

// processorOpts are the processor's options from the flags.
func processorOpts(top *plan.Plan, f runFlags, log *slog.Logger, m *metrics.Metrics, ui *live.State) []runtime.Opt {
	opts := []runtime.Opt{
		runtime.WithLogger(log), runtime.WithMetrics(m),
		runtime.WithInstanceID(f.instanceID), runtime.WithStaticMembership(f.static),
		runtime.WithTransactionTimeout(f.txnTimeout), runtime.WithOwnerURL(f.ownerURL),
	}
	if top.Settings.API.Samples != config.SamplesOff {
		// Off keeps no record content in memory at all.
		opts = append(opts, runtime.WithSideSampler(ui.Sample))
	}
	if f.workers > 0 {
		opts = append(opts, runtime.WithWorkers(f.workers))
	}
	if f.sessionTimeout > 0 {
		// Heartbeat at a third of the session, as Kafka recommends.
		opts = append(opts, runtime.WithKgoOpts(kgo.SessionTimeout(f.sessionTimeout), kgo.HeartbeatInterval(f.sessionTimeout/3)))
	}
	if len(testBuildKgoOpts) > 0 {
		opts = append(opts, runtime.WithKgoOpts(testBuildKgoOpts...))
	}
	return opts
}

// testBuildKgoOpts are client options of a test build only (kip848.go,
// build tag sidestream_kip848); a release build has none.
var testBuildKgoOpts []kgo.Opt

// logStarted logs the one "router started" line: build, API, brokers,
// guarantee and security (never the password), then the warnings.
func logStarted(log *slog.Logger, top *plan.Plan, build buildInfo, addr net.Addr, apiTLS bool, txnID string) {
	sec := top.Settings.Security
	started := []any{"version", build.version, "revision", build.revision, "api", addr.String(), "api_tls", apiTLS, "api_auth", top.Settings.API.Auth, "brokers", top.Settings.Brokers,
		"guarantee", top.Settings.Guarantee, "transactional_id", txnID, "security_protocol", sec.Protocol}
	if sec.UsesSASL() {
		// The mechanism and user only: the password is never logged.
		started = append(started, "sasl_mechanism", sec.SASL.Mechanism, "sasl_username", sec.SASL.Username)
	}
	log.Info("router started", started...)
	securityWarnings(log, sec)
	apiWarnings(log, top.Settings.API, addr)
}

// runUntilStopped runs the processor until it returns or ctx ends; then it
// has shutdown to finish its last transaction.
func runUntilStopped(ctx context.Context, proc *runtime.Processor, shutdown time.Duration, log *slog.Logger) error {
	done := make(chan error, 1)
	go func() { done <- proc.Run(ctx) }()
	var runErr error
	select {
	case runErr = <-done:
	case <-ctx.Done():
		log.Info("signal received, stopping", "timeout", shutdown)
		select {
		case runErr = <-done:
		case <-time.After(shutdown):
			runErr = fmt.Errorf("shutdown did not finish within %s", shutdown)
		}
	}
	return runErr
}

// securityWarnings logs the security settings that work but should not be
// used in production.
func securityWarnings(log *slog.Logger, sec config.Security) {
	if sec.UsesTLS() && sec.TLS.InsecureSkipVerify {
		log.Warn("TLS certificate verification is off (security.tls.insecure_skip_verify): any server can pose as the brokers; use only for tests, and set security.tls.ca_file instead")
	}
	if sec.UsesSASL() && sec.SASL.Password != "" && os.Getenv(config.EnvSASLPassword) == "" {
		log.Warn("the SASL password is written in the topology file; prefer " + config.EnvSASLPassword + " (from a Kubernetes Secret) and keep the file free of secrets")
	}
}

type taskList struct{ p *runtime.Processor }

func (t taskList) TaskList() any { return t.p.Tasks() }

// liveTasks lists p's tasks for the web view, which does not import the
// processor: each status as /tasks shows it, and its watermark.
func liveTasks(p *runtime.Processor) func() []live.Task {
	return func() []live.Task {
		ts := p.Tasks()
		out := make([]live.Task, len(ts))
		for i, t := range ts {
			out[i] = live.Task{Status: t, Watermark: t.Watermark}
		}
		return out
	}
}

func cmdTopology(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("router topology", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", os.Getenv("SIDESTREAM_CONFIG"), "topology file")
	format := fs.String("format", "json", "json, dot or mermaid")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	cfg, err := config.LoadFile(*configPath)
	if err != nil {
		var ce *config.ConfigError
		if errors.As(err, &ce) {
			return exitError{code: 1, msg: ce.Error()}
		}
		return err
	}
	top, err := plan.Compile(cfg, dirOf(*configPath))
	if err != nil {
		return err
	}
	b, err := top.Describe(*format)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	_, err = stdout.Write(b)
	return err
}
