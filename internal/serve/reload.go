package serve

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
)

// Reload is how `router run` reloads its topology: from File with the
// same overrides as at start, on SIGHUP, POST /reload and, with Watch,
// when the file's content changes. File "" turns reloading off (the
// demo).
type Reload struct {
	File      string
	Overrides config.Overrides
	// Watch polls File's content (WatchEvery, default 2s) and reloads
	// when its hash changes: a mounted ConfigMap replaces a symlink, so
	// its content, not an inotify event on the path, is what is watched.
	Watch      bool
	WatchEvery time.Duration
}

// reloadWait is how long a reload waits for the commit loop to take the
// new version (a commit interval is ~100 ms; a router that is not
// processing, waiting for its brokers, never takes it).
const reloadWait = 30 * time.Second

// Outcome is what one reload did: POST /reload's answer, and logged in
// one line.
type Outcome struct {
	Outcome string `json:"outcome"` // metrics.Reload*: applied, unchanged, refused, invalid, failed
	// Version is the version routing after the reload; From the one
	// before.
	Version string `json:"version"`
	From    string `json:"from"`
	// Changes are every difference of the file from the running plan
	// (router plan's), Refused those a running router cannot apply.
	Changes []plan.Change `json:"changes"`
	Refused []plan.Change `json:"refused,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// HTTPStatus is POST /reload's status for the outcome: 200 applied or
// unchanged, 409 refused, 422 invalid, 503 failed.
func (o Outcome) HTTPStatus() int {
	switch o.Outcome {
	case metrics.ReloadApplied, metrics.ReloadUnchanged:
		return http.StatusOK
	case metrics.ReloadRefused:
		return http.StatusConflict
	case metrics.ReloadInvalid:
		return http.StatusUnprocessableEntity
	}
	return http.StatusServiceUnavailable
}

// reloadTarget is what a reload swaps: the processor's stage one.
type reloadTarget interface {
	Reload(ctx context.Context, next *plan.Plan) error
}

// Reloader reloads the running topology, one reload at a time, and is
// the API's Describer of the version that routes.
type Reloader struct {
	mu   sync.Mutex
	load func() (*plan.Plan, error)
	proc reloadTarget
	cur  atomic.Pointer[plan.Plan]
	m    *metrics.Metrics
	log  *slog.Logger
	wait time.Duration
}

// NewReloader reloads top's successors, as load compiles them, into proc.
func NewReloader(top *plan.Plan, load func() (*plan.Plan, error), proc reloadTarget, m *metrics.Metrics, log *slog.Logger) *Reloader {
	r := &Reloader{load: load, proc: proc, m: m, log: log.With("component", "reload"), wait: reloadWait}
	r.cur.Store(top)
	m.SetTopologyVersion(top.Version)
	return r
}

// Describe renders the running plan (GET /topology).
func (r *Reloader) Describe(format string) ([]byte, error) { return r.cur.Load().Describe(format) }

// Plan is the running plan.
func (r *Reloader) Plan() *plan.Plan { return r.cur.Load() }

// Reload loads, validates and compiles the file, compares it with the
// running plan and, when every change is one a running router applies
// (plan.ReloadRefusals), hands it to the processor, which routes with it
// from its next commit interval on. Anything else leaves the running
// version as it is. It counts and logs the outcome.
func (r *Reloader) Reload(ctx context.Context) Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.reload(ctx)
	r.m.Reloads.WithLabelValues(o.Outcome).Inc()
	r.logOutcome(o)
	return o
}

func (r *Reloader) reload(ctx context.Context) Outcome {
	old := r.cur.Load()
	o := Outcome{From: old.Version, Version: old.Version, Changes: []plan.Change{}}
	next, err := r.load()
	if err != nil {
		o.Outcome, o.Error = metrics.ReloadInvalid, err.Error()
		return o
	}
	o.Changes = plan.Diff(old, next)
	if o.Refused = plan.ReloadRefusals(old, next, o.Changes); len(o.Refused) > 0 {
		o.Outcome = metrics.ReloadRefused
		return o
	}
	if next.Version == old.Version {
		o.Outcome = metrics.ReloadUnchanged
		return o
	}
	ctx, cancel := context.WithTimeout(ctx, r.wait)
	defer cancel()
	if err := r.proc.Reload(ctx, next); err != nil {
		o.Outcome, o.Error = metrics.ReloadFailed, err.Error()
		return o
	}
	r.cur.Store(next)
	r.m.SetTopologyVersion(next.Version)
	o.Outcome, o.Version = metrics.ReloadApplied, next.Version
	return o
}

// logOutcome is the one line of a reload: outcome, versions, the plan's
// summary and what was refused or failed.
func (r *Reloader) logOutcome(o Outcome) {
	s := plan.Summary(o.Changes)
	args := []any{"outcome", o.Outcome, "version", o.Version, "from", o.From,
		"live", s[plan.Live], "new_state", s[plan.NewState], "breaking", s[plan.Breaking], "changes", paths(o.Changes)}
	level := slog.LevelInfo
	switch {
	case o.Error != "":
		level, args = slog.LevelError, append(args, "err", o.Error)
	case len(o.Refused) > 0:
		level = slog.LevelWarn
		var why []string
		for _, c := range o.Refused {
			why = append(why, c.Path+": "+c.Note)
		}
		args = append(args, "refused", why)
	}
	r.log.Log(context.Background(), level, "topology reload", args...)
}

func paths(cs []plan.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Class + " " + c.Path
	}
	return out
}

// ServeReload answers POST /reload (api.Reloader).
func (r *Reloader) ServeReload(ctx context.Context) (int, any) {
	o := r.Reload(ctx)
	return o.HTTPStatus(), o
}

// watch reloads whenever file's content changes, polled every every,
// until ctx ends. A file that cannot be read (mid-swap) is looked at
// again on the next tick; the content at start is the running one.
func (r *Reloader) watch(ctx context.Context, file string, every time.Duration) {
	last := fileHash(file)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h := fileHash(file)
		if h == nil || bytes.Equal(h, last) {
			continue
		}
		last = h
		r.Reload(ctx)
	}
}

// fileHash is the sha256 of file's content, nil when it cannot be read.
func fileHash(file string) []byte {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// errReloadOff is POST /reload's answer when the router was not started
// from a file (the demo).
var errReloadOff = errors.New("this router does not reload (it was not started from a topology file)")

// loader compiles rl.File with the overrides of the start.
func loader(rl Reload) func() (*plan.Plan, error) {
	if rl.File == "" {
		return func() (*plan.Plan, error) { return nil, errReloadOff }
	}
	return func() (*plan.Plan, error) { return LoadTopology(rl.File, rl.Overrides, false) }
}

// startReloads reloads on SIGHUP and, with rl.Watch, on a change of the
// file, until ctx ends.
func startReloads(ctx context.Context, r *Reloader, rl Reload) {
	if rl.File == "" {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				r.Reload(ctx)
			}
		}
	}()
	if rl.Watch {
		go r.watch(ctx, rl.File, cmp.Or(rl.WatchEvery, 2*time.Second))
	}
}
