package sidestream_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sidestream/sidestream"
)

func isVIPFn(params ...any) (any, error) { return params[0] == "m-1", nil }

var nowhere = sidestream.WithBrokers("127.0.0.1:1")

// TestFunctionKnownToValidation: a registered function passes validation
// like a built-in; a call with an argument of the wrong type is refused
// at its FILE:LINE:COL; without registration it is an unknown function.
func TestFunctionKnownToValidation(t *testing.T) {
	if _, err := sidestream.Parse("p.yaml", []byte(payments), nowhere, sidestream.WithFunction("isVIP", isVIPFn, new(func(string) bool))); err != nil {
		t.Fatalf("a registered function is refused: %v", err)
	}
	_, err := sidestream.Parse("p.yaml", []byte(payments), nowhere)
	if err == nil || !strings.Contains(err.Error(), "p.yaml:7:11:") || !strings.Contains(err.Error(), "unknown function isVIP") {
		t.Fatalf("unregistered: %v, want unknown function isVIP at p.yaml:7:11", err)
	}
	wrong := strings.Replace(payments, "when: isVIP(merchant)", "when: isVIP(42)", 1)
	_, err = sidestream.Parse("p.yaml", []byte(wrong), nowhere, sidestream.WithFunction("isVIP", isVIPFn, new(func(string) bool)))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:7:") || !strings.Contains(err.Error(), "isVIP") {
		t.Fatalf("wrong argument type: %v, want an error at p.yaml:7", err)
	}
}

// TestFunctionNames: names that cannot be called or would hide another
// name are refused before the file is read.
func TestFunctionNames(t *testing.T) {
	for _, name := range []string{"", "1x", "a-b", "len", "_key"} {
		_, err := sidestream.Parse("p.yaml", []byte(payments), nowhere, sidestream.WithFunction(name, isVIPFn))
		if err == nil || !strings.Contains(err.Error(), "function") {
			t.Errorf("function %q: %v, want it refused", name, err)
		}
	}
	_, err := sidestream.Parse("p.yaml", []byte(payments), sidestream.WithFunction("isVIP", isVIPFn), sidestream.WithFunction("isVIP", isVIPFn))
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a function registered twice: %v", err)
	}
}

// TestFunctionErrorGoesToDirty: an error a function returns sends the
// record to dirty with the function's words; the others route.
func TestFunctionErrorGoesToDirty(t *testing.T) {
	strict := func(params ...any) (any, error) {
		if params[0] == "m-bad" {
			return nil, errBadMerchant
		}
		return params[0] == "m-1", nil
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "payments"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	r, err := sidestream.Parse("payments.yaml", []byte(payments),
		sidestream.WithFunction("isVIP", strict, new(func(string) bool)),
		sidestream.WithBrokers(cluster.ListenAddrs()...), sidestream.WithInstanceID("t"),
		sidestream.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	produce(cluster.ListenAddrs(), "payments", []string{"m-1", "m-bad", "m-2"})
	got := readAll(cluster.ListenAddrs(), 3, "payments.vip", "payments.rest", "payments.dirty")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Join(got["payments.vip"], ",") != "m-1" || strings.Join(got["payments.rest"], ",") != "m-2" || strings.Join(got["payments.dirty"], ",") != "m-bad" {
		t.Fatalf("got %v", got)
	}
}

var errBadMerchant = &merchantError{}

type merchantError struct{}

func (*merchantError) Error() string { return "merchant m-bad is blocked" }
