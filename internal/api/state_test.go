package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

type elsewhere struct{ owner any }

func (e elsewhere) Error() string   { return "key is owned elsewhere" }
func (e elsewhere) NotOwner() any   { return e.owner }
func (elsewhere) Unavailable() bool { return false }

type restoring struct{}

func (restoring) Error() string     { return "restoring" }
func (restoring) Unavailable() bool { return true }

// fakeState answers by key: "here" has state, the rest fail their way.
type fakeState struct{}

func (fakeState) ReadState(_ context.Context, key string) (any, error) {
	switch key {
	case "here", "":
		return map[string]any{"key": key, "windows": []int{1}}, nil
	case "there":
		return nil, elsewhere{owner: map[string]string{"member_id": "m-2", "host": "/10.0.0.2"}}
	case "nobody":
		return nil, errors.Join(errors.New("wrapped"), elsewhere{})
	case "later":
		return nil, restoring{}
	case "a b&c":
		return map[string]any{"key": key}, nil
	}
	return nil, errors.New("store broke")
}

func TestState(t *testing.T) {
	h := Handler(Config{Probe: fakeProbe{}, Describer: fakeDescriber{}, Tasks: fakeTasks{}, Metrics: http.NotFoundHandler(),
		State: map[string]StateReader{"errors": fakeState{}, "assembly": fakeState{}}})
	tests := []struct {
		path string
		code int
		want map[string]any // fields of the JSON body
	}{
		{"/state/errors?key=here", 200, map[string]any{"key": "here"}},
		{"/state/assembly?key=", 200, map[string]any{"key": ""}}, // an empty key is a key
		{"/state/errors?key=there", 404, map[string]any{"error": "key is owned elsewhere", "owner": map[string]any{"member_id": "m-2", "host": "/10.0.0.2"}}},
		{"/state/errors?key=nobody", 404, map[string]any{"owner": nil}},
		{"/state/errors?key=later", 503, map[string]any{"error": "restoring"}},
		{"/state/errors?key=broken", 500, map[string]any{"error": "store broke"}},
		{"/state/errors", 400, nil},
		{"/state/nope?key=here", 404, map[string]any{"error": `no stateful operator "nope"`, "operators": []any{"assembly", "errors"}}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.code {
				t.Fatalf("GET %s = %d, want %d (body %s)", tc.path, rec.Code, tc.code, rec.Body)
			}
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q is not a JSON object: %v", rec.Body, err)
			}
			for k, v := range tc.want {
				got, _ := json.Marshal(body[k])
				want, _ := json.Marshal(v)
				if _, present := body[k]; !present || string(got) != string(want) {
					t.Errorf("%s = %s, want %s (body %s)", k, got, want, rec.Body)
				}
			}
		})
	}
	// Keys with any bytes travel in the query string.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/state/errors?key="+url.QueryEscape("a b&c"), nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"a b\u0026c"`) {
		t.Fatalf("escaped key: %d %s", rec.Code, rec.Body)
	}
	// No readers at all: every operator is unknown.
	rec = httptest.NewRecorder()
	Handler(Config{Probe: fakeProbe{}, Describer: fakeDescriber{}, Tasks: fakeTasks{}, Metrics: http.NotFoundHandler()}).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/state/errors?key=x", nil))
	if rec.Code != 404 {
		t.Fatalf("no readers: %d", rec.Code)
	}
}
