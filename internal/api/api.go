// Package api serves sidestream's HTTP endpoints with chi: health,
// readiness, metrics, the compiled topology, the assigned tasks and
// interactive queries on operator state; every endpoint but the probes
// behind bearer tokens or client certificates when Auth says so.
//
// It declares the small interfaces it needs and must never import the
// processor or topology packages: cmd/router wires the implementations.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// Probe answers a health or readiness question with a reason.
type Probe interface {
	Healthy() (bool, string)
	Ready() (bool, string)
}

// Describer renders the compiled topology as "json", "dot" or "mermaid".
type Describer interface {
	Describe(format string) ([]byte, error)
}

// TaskLister lists the assigned tasks as JSON-encodable values.
type TaskLister interface {
	TaskList() any
}

// StateReader answers interactive queries on the state one stateful
// operator (a window route, an assembly) holds on this instance.
//
// ReadState returns a JSON-encodable view of key's state. Its errors are
// recognised by behaviour, so implementations need not import this
// package: an error with a method NotOwner() any means another instance
// owns the key (404; NotOwner returns the owner to show, or nil when
// unknown); one with Unavailable() bool means retry later (503); any
// other is a 500.
type StateReader interface {
	ReadState(ctx context.Context, key string) (any, error)
}

// Resumer ends a pause of the inputs an objective caused (POST
// /resume): it reports whether the inputs were paused, and why (or why
// there was nothing to resume).
type Resumer interface {
	Resume() (resumed bool, reason string)
}

// Reloader reloads the topology (POST /reload): the outcome as a
// JSON-encodable value and its HTTP status.
type Reloader interface {
	ServeReload(ctx context.Context) (status int, outcome any)
}

// TableReader reads the lookup tables for GET /tables/{name}/{key}: a
// row as of now (known false: no such table; loaded false: not loaded
// yet; found false: the key has no row).
type TableReader interface {
	TableRow(table, key string) (row any, found, known, loaded bool)
}

// ErrUnknownFormat is what a Describer returns for a format it lacks.
var ErrUnknownFormat = errors.New("unknown format")

// Config holds what the server serves.
type Config struct {
	Probe     Probe
	Describer Describer
	Tasks     TaskLister
	Metrics   http.Handler
	// UI is the web view's state; nil leaves /ui out.
	UI UIState
	// State maps an operator name to its reader, for GET
	// /state/{operator}?key=K. Nil or empty: every operator is unknown.
	State map[string]StateReader
	// Tables serves GET /tables/{name}/{key}; nil: no table is known.
	Tables TableReader
	// Auth guards every endpoint but the probes; the zero value is
	// AuthNone.
	Auth Auth
	// Resumer serves POST /resume; nil: not served (404).
	Resumer Resumer
	// Reload answers POST /reload; nil leaves it out.
	Reload Reloader
}

// Handler builds the router. The probes stay open whatever c.Auth says:
// kubelet calls them without credentials.
func Handler(c Config) http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Use(middleware.GetHead) // HEAD answers as GET does, without the body
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := c.Probe.Healthy()
		writeProbe(w, ok, reason)
	})
	r.Get("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := c.Probe.Ready()
		writeProbe(w, ok, reason)
	})
	if c.Auth.ProtectMetrics {
		r.With(c.Auth.middleware).Handle("/metrics", c.Metrics)
	} else {
		r.Handle("/metrics", c.Metrics)
	}
	if c.UI != nil {
		mountUIPage(r)
	}
	r.Group(func(r chi.Router) {
		r.Use(c.Auth.middleware)
		r.Get("/topology", func(w http.ResponseWriter, req *http.Request) {
			format := req.URL.Query().Get("format")
			if format == "" {
				format = "json"
			}
			b, err := c.Describer.Describe(format)
			if err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
				return
			}
			switch format {
			case "json":
				w.Header().Set("Content-Type", "application/json")
			default:
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			}
			_, _ = w.Write(b)
		})
		r.Get("/tasks", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, c.Tasks.TaskList())
		})
		if c.Reload != nil {
			r.Post("/reload", func(w http.ResponseWriter, req *http.Request) {
				code, outcome := c.Reload.ServeReload(req.Context())
				writeJSON(w, code, outcome)
			})
		}
		if c.UI != nil {
			mountUIData(r, c.UI)
		}
		r.Get("/state/{operator}", func(w http.ResponseWriter, req *http.Request) {
			serveState(w, req, c.State)
		})
		r.Get("/tables/{table}/{key}", func(w http.ResponseWriter, req *http.Request) {
			serveTable(w, chi.URLParam(req, "table"), chi.URLParam(req, "key"), c.Tables)
		})
		if c.Resumer != nil {
			r.Post("/resume", func(w http.ResponseWriter, _ *http.Request) {
				resumed, reason := c.Resumer.Resume()
				writeJSON(w, http.StatusOK, map[string]any{"resumed": resumed, "reason": reason})
			})
		}
		// Anything else is a 404, but only for a caller with credentials:
		// a stranger learns nothing of which paths exist.
		r.NotFound(http.NotFound)
	})
	return r
}

func serveState(w http.ResponseWriter, req *http.Request, readers map[string]StateReader) {
	name := chi.URLParam(req, "operator")
	sr, ok := readers[name]
	if !ok {
		known := slices.Sorted(maps.Keys(readers))
		writeJSON(w, http.StatusNotFound, map[string]any{
			"error": fmt.Sprintf("no stateful operator %q", name), "operators": known})
		return
	}
	q := req.URL.Query()
	if !q.Has("key") {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the key query parameter is required: /state/" + name + "?key=K"})
		return
	}
	v, err := sr.ReadState(req.Context(), q.Get("key"))
	var (
		notOwner interface{ NotOwner() any }
		unavail  interface{ Unavailable() bool }
	)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, v)
	case errors.As(err, &notOwner):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": err.Error(), "owner": notOwner.NotOwner()})
	case errors.As(err, &unavail) && unavail.Unavailable():
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	}
}

func serveTable(w http.ResponseWriter, table, key string, tr TableReader) {
	var row any
	found, known, loaded := false, false, false
	if tr != nil {
		row, found, known, loaded = tr.TableRow(table, key)
	}
	switch {
	case !known:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no table %q", table)})
	case !loaded:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": fmt.Sprintf("table %q is loading", table)})
	case !found:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": fmt.Sprintf("table %q has no row for key %q", table, key), "table": table, "key": key})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"table": table, "key": key, "row": row})
	}
}

func writeProbe(w http.ResponseWriter, ok bool, reason string) {
	code, status := http.StatusOK, "ok"
	if !ok {
		code, status = http.StatusServiceUnavailable, "unavailable"
	}
	writeJSON(w, code, map[string]string{"status": status, "reason": reason})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Server returns an http.Server with sane timeouts for addr.
func Server(addr string, h http.Handler) *http.Server {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	// Requests end when the server shuts down, so a long-lived stream
	// (/ui/events) never holds Shutdown up.
	ctx, cancel := context.WithCancel(context.Background())
	srv.RegisterOnShutdown(cancel)
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	return srv
}
