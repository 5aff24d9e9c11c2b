// Package api serves sidestream's HTTP endpoints with chi: health,
// readiness, metrics, the compiled topology and the assigned tasks.
//
// It declares the small interfaces it needs and must never import the
// processor or topology packages: cmd/router wires the implementations.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
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
}

// Handler builds the router.
func Handler(c Config) http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := c.Probe.Healthy()
		writeProbe(w, ok, reason)
	})
	r.Get("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, reason := c.Probe.Ready()
		writeProbe(w, ok, reason)
	})
	r.Handle("/metrics", c.Metrics)
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
	if c.UI != nil {
		mountUI(r, c.UI)
	}
	return r
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
