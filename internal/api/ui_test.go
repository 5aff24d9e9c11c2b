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

// clusterUI is a UI state with history and a cluster view; it remembers
// the Authorization its cluster view was asked with.
type clusterUI struct {
	fakeUI
	auth atomic.Value
}

func (c *clusterUI) UIHistory() any { return map[string]any{"times": []int64{1, 2}} }
func (c *clusterUI) UIStatus() any  { return map[string]any{"instance": "a"} }
func (c *clusterUI) UICluster(_ context.Context, auth string) any {
	c.auth.Store(auth)
	return map[string]any{"instances": []string{"a", "b"}}
}

// TestUIHistoryAndCluster: the endpoints are behind the API's auth, and
// the cluster view is handed the caller's credentials for the peers.
func TestUIHistoryAndCluster(t *testing.T) {
	toks, err := NewTokens("", []string{"s3cret-token-0123456789"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ui := &clusterUI{}
	h := Handler(Config{Probe: fakeProbe{}, Describer: fakeDescriber{}, Tasks: fakeTasks{}, Metrics: http.NotFoundHandler(),
		UI: ui, Auth: Auth{Mode: AuthBearer, Tokens: toks}})
	get := func(path, auth string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, p := range []string{"/ui/history", "/ui/status", "/ui/cluster"} {
		if rec := get(p, ""); rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s without a token: %d", p, rec.Code)
		}
	}
	const bearer = "Bearer s3cret-token-0123456789"
	for p, want := range map[string]string{"/ui/history": `"times":[1,2]`, "/ui/status": `"instance":"a"`, "/ui/cluster": `"instances":["a","b"]`} {
		if rec := get(p, bearer); rec.Code != 200 || !strings.Contains(rec.Body.String(), want) || rec.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %d %s", p, rec.Code, rec.Body)
		}
	}
	if got := ui.auth.Load(); got != bearer {
		t.Fatalf("the cluster view was asked with %q, want the caller's %q", got, bearer)
	}
	// A state without them serves neither.
	if rec := uiRec(uiHandler(&fakeUI{}), "/ui/history"); rec.Code != 404 {
		t.Fatalf("/ui/history of a plain state: %d", rec.Code)
	}
}

func uiRec(h http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}
