package observe

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
)

// compileVariant compiles ../testdata/errors-per-service.yaml (one window
// route on the input logs) with each repl[0] replaced by repl[1].
func compileVariant(t *testing.T, brokers []string, repl ...[2]string) *plan.Plan {
	t.Helper()
	b, err := os.ReadFile("../runtime/testdata/errors-per-service.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	for _, r := range repl {
		if !strings.Contains(y, r[0]) {
			t.Fatalf("testdata/errors-per-service.yaml: %q not found", r[0])
		}
		y = strings.ReplaceAll(y, r[0], r[1])
	}
	cfg, err := config.Load("variant.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(config.Overrides{Brokers: brokers}); err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, "../runtime/testdata/")
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// TestStatusDirectTasks: a direct window task lives while its input
// partition is assigned, and a changelog loss on it keeps the router not
// ready exactly that long.
func TestStatusDirectTasks(t *testing.T) {
	top := compileVariant(t, []string{"127.0.0.1:9"}, [2]string{"      emit: update\n", "      emit: update\n      repartition: false\n"})
	rep := top.Routes[0].Window.RepartitionTopic
	s := New(top, metrics.New())
	s.Assign("logs", []int32{0, 1})
	if s.task(rep, 1) == nil || s.task(rep, 2) != nil || s.assignedCount() != 2 {
		t.Fatalf("after assigning logs 0,1: direct 1 %v, direct 2 %v, %d assigned", s.task(rep, 1), s.task(rep, 2), s.assignedCount())
	}
	s.Window(rep, 1, "errors", nil, 3, 4, 100)
	if d := s.task(rep, 1); !d.Direct || d.OpenWindows != 3 || d.Topic != "logs" || d.Route != "errors" {
		t.Fatalf("direct task status %+v", d)
	}
	s.SetLost(rep, 1, "changelog lost")
	if why := s.lostReason(); !strings.Contains(why, "changelog lost") {
		t.Fatalf("lost reason %q while the direct task is assigned", why)
	}
	s.Revoke("logs", []int32{1})
	if s.task(rep, 1) != nil || s.lostReason() != "" {
		t.Fatalf("after revoking logs 1: direct task %v, lost reason %q", s.task(rep, 1), s.lostReason())
	}
	// The loss is remembered for the partition (not ready again if it
	// comes back) until its task restores.
	if got := s.LostPartitions(rep); len(got) != 1 || got[0] != 1 {
		t.Fatalf("lost partitions of %s after the revoke: %v, want [1]", rep, got)
	}
	s.ClearLost(rep, 1)
	if got := s.LostPartitions(rep); len(got) != 0 {
		t.Fatalf("lost partitions of %s after ClearLost: %v", rep, got)
	}
}

// TestReadyAfterCommitKeepsStop: readiness after a commit and a stop
// recorded at the same moment (a changelog loss on an assigned partition)
// end not ready, on /readyz and the gauge alike, whatever their order:
// the check of the stops and the publication of "ok" are one step.
func TestReadyAfterCommitKeepsStop(t *testing.T) {
	top := compileVariant(t, []string{"127.0.0.1:9"}, [2]string{"      emit: update\n", "      emit: update\n"})
	rep := top.Routes[0].Window.RepartitionTopic
	for i := range 500 {
		m := metrics.New()
		s := New(top, m)
		s.SetJoined(true)
		s.Assign(rep, []int32{0})
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.SetLost(rep, 0, "changelog lost")
		}()
		s.ReadyAfterCommit(true, "app")
		<-done
		ok, why := s.ready.ok, s.ready.reason
		if ok || why != "changelog lost" || testutil.ToFloat64(m.Ready) != 0 {
			t.Fatalf("round %d: ready %v (%q), gauge %v after a commit and a changelog loss", i, ok, why, testutil.ToFloat64(m.Ready))
		}
	}
	s := New(top, metrics.New())
	s.ReadyAfterCommit(true, "app")
	if ok, why := s.ready.ok, s.ready.reason; ok || !strings.Contains(why, "joining consumer group app") {
		t.Fatalf("ready %v (%q) before the group is joined", ok, why)
	}
	s.SetJoined(true)
	s.ReadyAfterCommit(true, "app")
	if ok, _ := s.ready.ok, s.ready.reason; !ok {
		t.Fatal("not ready after a commit in a joined group with nothing stopped")
	}
}

// TestGaugesWithTasks: the assigned partitions and consumer lag gauges
// say what /tasks says, and a revoked partition's lag series goes with it.
func TestGaugesWithTasks(t *testing.T) {
	m := metrics.New()
	s := New(compileVariant(t, []string{"127.0.0.1:9"}), m)
	s.Assign("logs", []int32{0, 1, 2})
	if g := testutil.ToFloat64(m.Assigned); g != 3 {
		t.Fatalf("assigned gauge %v after assigning 3 partitions", g)
	}
	s.Progress("logs", 1, 40, 100)
	s.Progress("logs", 2, 100, 100)
	if g := testutil.ToFloat64(m.ConsumerLag.WithLabelValues("logs", "1")); g != 60 {
		t.Fatalf("lag gauge of logs/1 %v, want 60", g)
	}
	for _, ts := range s.Tasks() {
		if ts.Partition == 1 && ts.Lag != 60 {
			t.Fatalf("/tasks lag of logs/1 %d, want 60", ts.Lag)
		}
	}
	s.Revoke("logs", []int32{1})
	if g := testutil.ToFloat64(m.Assigned); g != 2 || len(s.Tasks()) != 2 {
		t.Fatalf("assigned gauge %v, %d tasks after revoking one of 3", g, len(s.Tasks()))
	}
	if n := testutil.CollectAndCount(m.ConsumerLag); n != 1 {
		t.Fatalf("%d lag series after revoking logs/1, want 1 (logs/2)", n)
	}
}
