package api

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// uiFiles are the web view's page, script and style: plain HTML, JS and
// SVG, served from the binary; the page loads nothing from elsewhere.
//
//go:embed ui
var uiFiles embed.FS

// UIState gives the web view its state as a JSON-encodable value.
type UIState interface {
	UIView() any
}

// UIHistory, when a UIState implements it, serves /ui/history: the rates
// of the last minutes, for the web view's charts.
type UIHistory interface {
	UIHistory() any
}

// UICluster, when a UIState implements it, serves /ui/status (this
// instance, for its peers) and /ui/cluster (every instance of the
// application). auth is the request's Authorization header, which the
// peers are asked with.
type UICluster interface {
	UIStatus() any
	UICluster(ctx context.Context, auth string) any
}

// uiInterval is how often /ui/events sends the state.
const uiInterval = time.Second

// mountUIPage serves the web view's page, script and style (/ui/), which
// hold no data: they load without credentials, so the page can ask for a
// token.
func mountUIPage(r chi.Router) {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	static := http.StripPrefix("/ui/", http.FileServer(http.FS(sub)))
	r.Get("/ui", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/ui/", http.StatusFound)
	})
	// A person who opens the API's address lands on the web view.
	r.Get("/", func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, "/ui/", http.StatusFound)
	})
	r.Get("/ui/*", func(w http.ResponseWriter, req *http.Request) {
		h := w.Header()
		// The page is self-contained: forbid anything from elsewhere.
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		static.ServeHTTP(w, req)
	})
}

// mountUIData serves the web view's state: /ui/state (JSON, for polling)
// and /ui/events (the state every second as server-sent events).
func mountUIData(r chi.Router, st UIState) {
	r.Get("/ui/state", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, st.UIView())
	})
	if h, ok := st.(UIHistory); ok {
		r.Get("/ui/history", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			writeJSON(w, http.StatusOK, h.UIHistory())
		})
	}
	if c, ok := st.(UICluster); ok {
		r.Get("/ui/status", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			writeJSON(w, http.StatusOK, c.UIStatus())
		})
		r.Get("/ui/cluster", func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Cache-Control", "no-store")
			writeJSON(w, http.StatusOK, c.UICluster(req.Context(), req.Header.Get("Authorization")))
		})
	}
	r.Get("/ui/events", func(w http.ResponseWriter, req *http.Request) {
		fl, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		t := time.NewTicker(uiInterval)
		defer t.Stop()
		for {
			b, err := json.Marshal(st.UIView())
			if err != nil {
				return
			}
			if _, err := fmt.Fprintf(w, "event: state\ndata: %s\n\n", b); err != nil {
				return
			}
			fl.Flush()
			select {
			case <-req.Context().Done():
				return
			case <-t.C:
			}
		}
	})
}
