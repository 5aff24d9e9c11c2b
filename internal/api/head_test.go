package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRootAndHead: / leads to the web view, and HEAD answers like GET
// (status, headers, no body) on the probes and the page.
func TestRootAndHead(t *testing.T) {
	h := uiHandler(&fakeUI{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/ui/" {
		t.Errorf("GET /: %d, Location %q; want 302 to /ui/", rec.Code, rec.Header().Get("Location"))
	}
	for _, path := range []string{"/healthz", "/readyz", "/ui/", "/topology", "/tasks", "/"} {
		get, head := httptest.NewRecorder(), httptest.NewRecorder()
		h.ServeHTTP(get, httptest.NewRequest(http.MethodGet, path, nil))
		h.ServeHTTP(head, httptest.NewRequest(http.MethodHead, path, nil))
		if head.Code != get.Code || head.Code == http.StatusMethodNotAllowed || head.Code == http.StatusNotFound {
			t.Errorf("HEAD %s: %d, GET %d", path, head.Code, get.Code)
		}
	}
}
