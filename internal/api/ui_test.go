package api

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type fakeUI struct{ n atomic.Int64 }

func (f *fakeUI) UIView() any { return map[string]any{"n": f.n.Add(1), "text": "<b>not markup</b>"} }

func uiHandler(ui UIState) http.Handler {
	return Handler(Config{Probe: fakeProbe{}, Describer: fakeDescriber{}, Tasks: fakeTasks{}, Metrics: http.NotFoundHandler(), UI: ui})
}

func TestUIAssets(t *testing.T) {
	h := uiHandler(&fakeUI{})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	if rec := get("/ui"); rec.Code != http.StatusFound || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("/ui: %d %v", rec.Code, rec.Header())
	}
	page := get("/ui/")
	if page.Code != 200 || !strings.Contains(page.Body.String(), `<script src="app.js"`) {
		t.Fatalf("/ui/: %d %s", page.Code, page.Body)
	}
	if csp := page.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Fatalf("no CSP: %q", csp)
	}
	// Self-contained: no asset names another host.
	ext := regexp.MustCompile(`(src|href)="(https?:)?//`)
	for _, p := range []string{"/ui/", "/ui/app.js", "/ui/style.css"} {
		rec := get(p)
		if rec.Code != 200 || rec.Body.Len() == 0 {
			t.Fatalf("%s: %d", p, rec.Code)
		}
		if ext.MatchString(rec.Body.String()) || strings.Contains(rec.Body.String(), "@import") {
			t.Fatalf("%s loads something from elsewhere", p)
		}
	}
	// The script never writes server data as markup.
	if js := get("/ui/app.js").Body.String(); strings.Contains(js, "innerHTML") || strings.Contains(js, "insertAdjacentHTML") {
		t.Fatalf("app.js writes HTML")
	}
	if rec := get("/ui/state"); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"n":1`) {
		t.Fatalf("/ui/state: %d %s", rec.Code, rec.Body)
	}
	if rec := get("/ui/nope.js"); rec.Code != 404 {
		t.Fatalf("/ui/nope.js: %d", rec.Code)
	}
	// Without a UI state there is no /ui.
	rec := httptest.NewRecorder()
	Handler(Config{Probe: fakeProbe{}, Describer: fakeDescriber{}, Tasks: fakeTasks{}, Metrics: http.NotFoundHandler()}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/", nil))
	if rec.Code != 404 {
		t.Fatalf("/ui/ without state: %d", rec.Code)
	}
}

// TestUIEventsStreamAndShutdown reads two state events from /ui/events
// on a real server, then shuts the server down with the stream open: the
// stream must end and Shutdown must return at once.
func TestUIEventsStreamAndShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := Server(ln.Addr().String(), uiHandler(&fakeUI{}))
	go func() { _ = srv.Serve(ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for len(events) < 2 && sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "data: ") {
			events = append(events, l)
		}
	}
	if len(events) != 2 || !strings.Contains(events[0], `"n":1`) || !strings.Contains(events[1], `"n":2`) {
		t.Fatalf("events %q", events)
	}
	if !strings.Contains(events[0], `\u003cb\u003e`) {
		t.Fatalf("markup in the state is not escaped in JSON: %s", events[0])
	}
	start := time.Now()
	// An open stream that kept the server up would hold Shutdown to its
	// context; the ceilings leave a loaded machine room below that.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an open stream: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %s", d)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the stream ends
}
