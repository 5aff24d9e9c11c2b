package kclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/registry"
)

// A registration the registry refused (4xx but 408 and 429) is not
// retried; an answer it could not give (5xx, 408, 429, no answer) is.
func TestRegistrationRefused(t *testing.T) {
	for _, c := range []struct {
		err     error
		refused bool
	}{
		{&sr.ResponseError{StatusCode: 409, ErrorCode: 409, Message: "incompatible"}, true},
		{fmt.Errorf("register: %w", &sr.ResponseError{StatusCode: 422, ErrorCode: 42201}), true},
		{&sr.ResponseError{StatusCode: 401}, true},
		{&sr.ResponseError{StatusCode: 404, ErrorCode: 404}, true},
		{&sr.ResponseError{StatusCode: 408}, false},
		{&sr.ResponseError{StatusCode: 429}, false},
		{&sr.ResponseError{StatusCode: 500, ErrorCode: 50001}, false},
		{&sr.ResponseError{StatusCode: 503}, false},
		{context.DeadlineExceeded, false},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
	} {
		re, refused := RegistrationRefused(c.err)
		if refused != c.refused || (refused && re == nil) {
			t.Errorf("%v: refused %v (%v), want %v", c.err, refused, re, c.refused)
		}
	}
}

// RegistryOpts hands the section's unknown_id_ttl and fetch_timeout to the
// schema cache: 0s asks the registry on every lookup of an unknown id, the
// default remembers it, and a fetch slower than fetch_timeout is the
// registry's outage.
func TestRegistryOpts(t *testing.T) {
	var byID atomic.Int64
	hang := make(chan struct{})
	f := srfake.New()
	t.Cleanup(f.Close)
	t.Cleanup(func() { close(hang) }) // before f.Close: the hung handler returns
	f.Intercept(func(_ http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			byID.Add(1)
			if r.URL.Path == "/schemas/ids/7" {
				select {
				case <-hang:
				case <-r.Context().Done():
				}
			}
		}
		return false
	})
	lookups := func(s config.SchemaRegistry, n int) int64 {
		t.Helper()
		s.URL = f.URL()
		cl, err := RegistryClient(s)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := registry.New(cl, RegistryOpts(s)...)
		if err != nil {
			t.Fatal(err)
		}
		byID.Store(0)
		for range n {
			var re *registry.RecordError
			if _, err := reg.Lookup(context.Background(), 404); !errors.As(err, &re) {
				t.Fatalf("lookup of an unknown id: %v, want a *registry.RecordError", err)
			}
		}
		return byID.Load()
	}
	zero := config.Span(0)
	if n := lookups(config.SchemaRegistry{UnknownIDTTL: &zero}, 3); n != 3 {
		t.Errorf("unknown_id_ttl 0s: %d registry requests for 3 lookups, want 3", n)
	}
	if n := lookups(config.SchemaRegistry{}, 3); n != 1 {
		t.Errorf("unknown_id_ttl unset (30s): %d registry requests for 3 lookups, want 1", n)
	}

	s := config.SchemaRegistry{URL: f.URL(), FetchTimeout: config.Duration(50 * time.Millisecond)}
	cl, err := RegistryClient(s)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(cl, RegistryOpts(s)...)
	if err != nil {
		t.Fatal(err)
	}
	// The caller's ceiling is generous and the default fetch timeout 10s:
	// only the configured 50ms ends the lookup within 5s as an outage.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	_, err = reg.Lookup(ctx, 7)
	var ue *registry.UnavailableError
	if !errors.As(err, &ue) || ctx.Err() != nil {
		t.Fatalf("lookup past fetch_timeout: %v (ctx %v), want a *registry.UnavailableError", err, ctx.Err())
	}
	if el := time.Since(start); el >= 5*time.Second {
		t.Fatalf("lookup took %s with a 50ms fetch_timeout", el)
	}
}
