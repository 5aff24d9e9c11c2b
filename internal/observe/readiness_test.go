package observe

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidestream/sidestream/internal/metrics"
)

// TestReadinessOnePublisher: every way the observer publishes readiness
// (a new observer, NotReady, a commit, a gap stop) sets /readyz's answer
// and the sidestream_ready gauge together, and warnings follow the reason
// without making the router unready.
func TestReadinessOnePublisher(t *testing.T) {
	top := compileVariant(t, []string{"127.0.0.1:9"})
	m := metrics.New()
	m.Ready.Set(1)
	s := New(top, m)
	check := func(when string, want bool, reason string) {
		t.Helper()
		ok, why := s.Ready()
		if ok != want || !strings.Contains(why, reason) {
			t.Errorf("%s: ready %v (%q), want %v (%q)", when, ok, why, want, reason)
		}
		if g := testutil.ToFloat64(m.Ready); (g == 1) != ok {
			t.Errorf("%s: /readyz says ready=%v (%q) but sidestream_ready is %v", when, ok, why, g)
		}
	}
	check("new", false, "starting")
	s.SetJoined(true)
	s.Assign("logs", []int32{0})
	s.ReadyAfterCommit(true, "app")
	check("after a commit", true, "ok")
	s.NotReady("transaction aborted: produce failed")
	check("after NotReady", false, "produce failed")
	s.ReadyAfterCommit(true, "app")
	s.Warn("repartition topic has time retention")
	check("with a warning", true, "ok; warning: repartition topic has time retention")
	s.ReadyAfterCommit(false, "app")
	check("without a generation", false, "joining consumer group app")
	g := metrics.Gap{Topic: "logs", Partition: 0, From: 5, To: 9}
	s.SetGapStop(g, "gap in logs/0")
	check("after a gap stop", false, "gap in logs/0")
	s.ReadyAfterCommit(true, "app")
	check("a commit while the gap stop holds", false, "gap in logs/0")
	if !s.ClearGapStop("logs", 0) || s.ClearGapStop("logs", 0) {
		t.Error("ClearGapStop does not report the stop exactly once")
	}
	s.ReadyAfterCommit(true, "app")
	check("a commit after the gap stop cleared", true, "ok")
}

// TestHealthy: /healthz is unhealthy only when the poll loop has not
// turned (or, never turned, not started) within the stall limit.
func TestHealthy(t *testing.T) {
	s := New(compileVariant(t, []string{"127.0.0.1:9"}), metrics.New())
	if ok, _ := s.Healthy(time.Minute); ok {
		t.Error("healthy before the processor started")
	}
	s.Start()
	if ok, why := s.Healthy(time.Minute); !ok {
		t.Errorf("unhealthy just after the start: %s", why)
	}
	s.mu.Lock()
	s.started = time.Now().Add(-2 * time.Minute)
	s.mu.Unlock()
	if ok, why := s.Healthy(time.Minute); ok || !strings.Contains(why, "has not turned for 2m") {
		t.Errorf("healthy %v (%q) two minutes after a start with no loop turn", ok, why)
	}
	s.Loop()
	if ok, why := s.Healthy(time.Minute); !ok {
		t.Errorf("unhealthy right after a loop turn: %s", why)
	}
}
