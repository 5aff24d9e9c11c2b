package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type fakeProbe struct {
	healthy, ready bool
	reason         string
}

func (f fakeProbe) Healthy() (bool, string) { return f.healthy, f.reason }
func (f fakeProbe) Ready() (bool, string)   { return f.ready, f.reason }

type fakeDescriber struct{}

func (fakeDescriber) Describe(format string) ([]byte, error) {
	switch format {
	case "json":
		return []byte(`{"routes":[]}`), nil
	case "dot":
		return []byte("digraph {}"), nil
	}
	return nil, errors.New("unknown format \"" + format + "\"")
}

type fakeTasks struct{}

func (fakeTasks) TaskList() any { return []map[string]any{{"topic": "logs", "partition": 3}} }

func serve(t *testing.T, p fakeProbe, path string) *httptest.ResponseRecorder {
	t.Helper()
	h := Handler(Config{Probe: p, Describer: fakeDescriber{}, Tasks: fakeTasks{},
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("sidestream_up 1\n")) })})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestEndpoints(t *testing.T) {
	tests := []struct {
		name     string
		probe    fakeProbe
		path     string
		code     int
		contains string
	}{
		{"healthy", fakeProbe{healthy: true, reason: "ok"}, "/healthz", 200, `"status":"ok"`},
		{"unhealthy", fakeProbe{healthy: false, reason: "poll loop has not turned for 2m0s"}, "/healthz", 503, `poll loop has not turned`},
		{"ready", fakeProbe{ready: true, reason: "ok"}, "/readyz", 200, `"status":"ok"`},
		{"not ready says why", fakeProbe{reason: "waiting for brokers 127.0.0.1:9092: dial tcp: connection refused"}, "/readyz", 503, `waiting for brokers`},
		{"metrics", fakeProbe{}, "/metrics", 200, "sidestream_up 1"},
		{"topology json", fakeProbe{}, "/topology", 200, `"routes"`},
		{"topology dot", fakeProbe{}, "/topology?format=dot", 200, "digraph"},
		{"topology bad format", fakeProbe{}, "/topology?format=png", 400, `unknown format`},
		{"tasks", fakeProbe{}, "/tasks", 200, `"partition":3`},
		{"unknown path", fakeProbe{}, "/nope", 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(t, tc.probe, tc.path)
			if rec.Code != tc.code {
				t.Fatalf("GET %s = %d, want %d (body %s)", tc.path, rec.Code, tc.code, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Fatalf("GET %s body %q does not contain %q", tc.path, rec.Body, tc.contains)
			}
		})
	}
}

func TestProbeBodyIsJSON(t *testing.T) {
	rec := serve(t, fakeProbe{reason: "starting"}, "/readyz")
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("readyz body is not JSON: %v", err)
	}
	if body["status"] != "unavailable" || body["reason"] != "starting" {
		t.Fatalf("readyz body = %v", body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
}
