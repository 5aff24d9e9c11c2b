package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/api"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/live"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/runtime"
	"github.com/sidestream/sidestream/internal/tracing"
)

// Build is what `router version` prints and sidestream_build_info
// carries.
type Build struct {
	Version   string
	Revision  string
	GoVersion string
}

// Options are the process settings of `router run` (and of the demo's
// router) that the topology file does not hold.
type Options struct {
	Listen         string        // HTTP API address
	InstanceID     string        // this process's name in the group ("": the host name)
	OwnerURL       string        // template of another instance's API URL
	Static         bool          // the instance id as group.instance.id
	Workers        int           // partitions processed in parallel (0: GOMAXPROCS)
	TxnTimeout     time.Duration // broker-side transaction timeout
	SessionTimeout time.Duration // consumer group session timeout (0: franz-go's)
	KgoOpts        []kgo.Opt     // client options of a test build (cmd/router/kip848.go); none in a release
	Build          Build
	// Reload: where the topology is reloaded from (SIGHUP, POST /reload,
	// --watch); its zero value reloads nothing.
	Reload Reload
}

// Hooks let the demo share the web view's state and learn the API's
// address.
type Hooks struct {
	UI        *live.State       // nil: a fresh one
	Listening func(addr string) // called once the API listens
}

// UIView adapts live.State to api.UIState.
type UIView struct{ S *live.State }

// UIView implements api.UIState.
func (u UIView) UIView() any { return u.S.View() }

// UIHistory implements api.UIHistory.
func (u UIView) UIHistory() any { return u.S.History() }

// UIStatus implements api.UICluster.
func (u UIView) UIStatus() any { return u.S.Status() }

// UICluster implements api.UICluster.
func (u UIView) UICluster(ctx context.Context, auth string) any { return u.S.Cluster(ctx, auth) }

// Run runs the processor and the HTTP API until ctx ends, then stops
// both within the topology's shutdown timeout.
func Run(ctx context.Context, top *plan.Plan, o Options, log *slog.Logger, m *metrics.Metrics, hooks Hooks) error {
	m.SetBuildInfo(o.Build.Version, o.Build.Revision, o.Build.GoVersion)
	ui := hooks.UI
	if ui == nil {
		ui = live.New(top, m, live.Options{})
	}
	tracer, err := tracing.New(ctx, top)
	if err != nil {
		return err
	}
	defer stopTracer(ctx, tracer, log)
	proc, err := runtime.New(top, processorOpts(top, o, log, m, ui, tracer)...)
	if err != nil {
		return err
	}
	ui.SetTasks(liveTasks(proc), proc.Ready)
	stopView, err := clusterView(ctx, top, o, ui, proc.InstanceID())
	if err != nil {
		return err
	}
	defer stopView()
	rl := NewReloader(top, loader(o.Reload), proc, m, log)
	auth, tlsCfg, err := apiSecurity(top.Settings.API, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen for the HTTP API: %w", err)
	}
	addr := ln.Addr()
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	srv := api.Server(o.Listen, api.Handler(api.Config{
		Probe:     proc,
		Describer: rl,
		Reload:    reloadAPI(rl, o.Reload),
		Tasks:     taskList{proc},
		Metrics:   m.Handler(),
		UI:        UIView{ui},
		State:     stateReadersFor(proc, top.Settings.API),
		Tables:    proc,
		Auth:      auth,
		Resumer:   proc,
	}))
	if hooks.Listening != nil {
		hooks.Listening(addr.String())
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	logStarted(log, top, o.Build, addr, tlsCfg != nil, proc.TransactionalID())
	startReloads(ctx, rl, o.Reload)

	runErr := runUntilStopped(ctx, proc, top.Settings.Shutdown.D(), log)
	// ctx has ended: the API gets its own few seconds to close.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	if runErr == nil {
		log.Info("router stopped")
	}
	return runErr
}

// clusterView starts the web view's history and makes its cluster view
// list the group's members; stop ends both (the view then shows this
// instance alone).
func clusterView(ctx context.Context, top *plan.Plan, o Options, ui *live.State, self string) (stop func(), err error) {
	members, err := newGroupMembers(top, o)
	if err != nil {
		return nil, err
	}
	ui.SetCluster(live.ClusterConfig{Self: self, Members: members.Members})
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { ui.RunHistory(ctx, live.HistoryInterval) })
	return func() {
		cancel()
		wg.Wait()
		ui.SetCluster(live.ClusterConfig{Self: self})
		members.Close()
	}, nil
}

// reloadAPI is POST /reload's reloader: none when the router was not
// started from a file.
func reloadAPI(rl *Reloader, o Reload) api.Reloader {
	if o.File == "" {
		return nil
	}
	return rl
}

// processorOpts are the processor's options from o.
func processorOpts(top *plan.Plan, o Options, log *slog.Logger, m *metrics.Metrics, ui *live.State, tracer *tracing.Tracer) []runtime.Opt {
	opts := []runtime.Opt{
		runtime.WithLogger(log), runtime.WithMetrics(m),
		runtime.WithInstanceID(o.InstanceID), runtime.WithStaticMembership(o.Static),
		runtime.WithTransactionTimeout(o.TxnTimeout), runtime.WithOwnerURL(o.OwnerURL),
		runtime.WithTracer(tracer),
	}
	if top.Settings.API.Samples != config.SamplesOff {
		// Off keeps no record content in memory at all.
		opts = append(opts, runtime.WithSideSampler(ui.Sample))
	}
	if o.Workers > 0 {
		opts = append(opts, runtime.WithWorkers(o.Workers))
	}
	if o.SessionTimeout > 0 {
		// Heartbeat at a third of the session, as Kafka recommends.
		opts = append(opts, runtime.WithKgoOpts(kgo.SessionTimeout(o.SessionTimeout), kgo.HeartbeatInterval(o.SessionTimeout/3)))
	}
	if len(o.KgoOpts) > 0 {
		opts = append(opts, runtime.WithKgoOpts(o.KgoOpts...))
	}
	return opts
}

// stopTracer flushes the spans not exported yet, for at most 5 s after
// ctx ended.
func stopTracer(ctx context.Context, t *tracing.Tracer, log *slog.Logger) {
	if err := t.Stop(ctx); err != nil {
		log.Warn("tracing: spans not exported at shutdown", "err", err)
	}
}

// logStarted logs the one "router started" line: build, API, brokers,
// guarantee and security (never the password), then the warnings.
func logStarted(log *slog.Logger, top *plan.Plan, build Build, addr net.Addr, apiTLS bool, txnID string) {
	sec := top.Settings.Security
	started := []any{"version", build.Version, "revision", build.Revision, "api", addr.String(), "api_tls", apiTLS, "api_auth", top.Settings.API.Auth, "brokers", top.Settings.Brokers,
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
