package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type fakeResumer struct{ paused bool }

func (f *fakeResumer) Resume() (bool, string) {
	if !f.paused {
		return false, "the inputs are not paused"
	}
	f.paused = false
	return true, "inputs paused: route dirty objective dirty_share"
}

// POST /resume is behind the API's auth and says what it resumed.
func TestResume(t *testing.T) {
	toks, err := NewTokens("", []string{tokA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeResumer{paused: true}
	h := Handler(Config{Probe: fakeProbe{}, Describer: fakeDescriber{}, Tasks: fakeTasks{}, Metrics: http.NotFoundHandler(),
		Auth: Auth{Mode: AuthBearer, Tokens: toks}, Resumer: r})
	post := func(auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/resume", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := post(""); rec.Code != http.StatusUnauthorized || !r.paused {
		t.Fatalf("without credentials: %d, paused %v", rec.Code, r.paused)
	}
	rec := post("Bearer " + tokA)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"resumed":true`) || !strings.Contains(rec.Body.String(), "dirty_share") || r.paused {
		t.Fatalf("resume: %d %s", rec.Code, rec.Body)
	}
	if rec := post("Bearer " + tokA); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"resumed":false`) {
		t.Fatalf("second resume: %d %s", rec.Code, rec.Body)
	}
	if rec := get(t, h, "/resume", "Bearer "+tokA); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /resume: %d", rec.Code)
	}
}
