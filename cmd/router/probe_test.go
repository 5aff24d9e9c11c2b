package main

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestProbe(t *testing.T) {
	var calls atomic.Int32
	// Not ready for the first two GETs, as /readyz while the router joins.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "waiting for brokers", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	code, out, errs := run(t, "probe", "--interval", "10ms", "--timeout", "1m", srv.URL+"/readyz")
	if code != 0 || out != srv.URL+"/readyz: 200 OK\n" || !strings.Contains(errs, "503 Service Unavailable waiting for brokers; trying again") {
		t.Errorf("probe of a server ready on the third GET: exit %d, %q, %q", code, out, errs)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d GETs, want 3", n)
	}
}

func TestProbeFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "changelog loss on route counts", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	code, _, errs := run(t, "probe", "--interval", "10ms", "--timeout", "50ms", srv.URL+"/readyz")
	if code != 1 || !strings.Contains(errs, "503 Service Unavailable changelog loss on route counts") {
		t.Errorf("probe of a never-ready server: exit %d, %q", code, errs)
	}
	srv.Close()
	if code, _, errs := run(t, "probe", "--timeout", "0", srv.URL); code != 1 || !strings.Contains(errs, "connection refused") {
		t.Errorf("probe of a closed port: exit %d, %q", code, errs)
	}
	for _, args := range [][]string{{"probe"}, {"probe", "localhost:8080/readyz"}, {"probe", "http://a", "http://b"}} {
		if code, _, _ := run(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

func TestProbeTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "probe", "--timeout", "0", srv.URL); code != 1 || !strings.Contains(errs, "certificate") {
		t.Errorf("https without the CA: exit %d, %q; want a certificate error", code, errs)
	}
	// httptest's certificate is for example.com and 127.0.0.1.
	if code, out, errs := run(t, "probe", "--timeout", "0", "--ca-file", ca, "--server-name", "example.com", srv.URL); code != 0 {
		t.Errorf("https with the CA: exit %d, %q, %q", code, out, errs)
	}
}
