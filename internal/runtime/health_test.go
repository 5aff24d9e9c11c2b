package runtime

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHealthyWhileWaitingForBrokers: a router that cannot reach its
// brokers waits on purpose; /healthz stays 200 past the stall limit (a
// restart would not bring the brokers) while /readyz says why it waits.
// The property is over time, so the test watches for a fixed span of
// three stall limits.
func TestHealthyWhileWaitingForBrokers(t *testing.T) {
	top := exampleAt(t, filepath.Join("../../examples", "logs-by-level.yaml"), []string{"127.0.0.1:1"})
	p, err := New(top)
	if err != nil {
		t.Fatal(err)
	}
	p.opts.stallAfter = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, why := p.Ready(); strings.Contains(why, "waiting for brokers") {
			break
		}
		if time.Now().After(deadline) {
			_, why := p.Ready()
			t.Fatalf("not waiting for brokers after a minute: %q", why)
		}
	}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok, why := p.Healthy(); !ok {
			t.Fatalf("unhealthy while waiting for brokers: %s", why)
		}
	}
	if ok, why := p.Ready(); ok || !strings.Contains(why, "waiting for brokers") {
		t.Fatalf("ready %v %q, want not ready, waiting for brokers", ok, why)
	}
}
