package processor

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/processor/stateful"
)

// TestStatusDirectTasks: a direct window task lives while its input
// partition is assigned, and a changelog loss on it keeps the router not
// ready exactly that long.
func TestStatusDirectTasks(t *testing.T) {
	top := compileVariant(t, []string{"127.0.0.1:9"}, [2]string{"      emit: update\n", "      emit: update\n      repartition: false\n"})
	rep := top.Routes[0].Window.RepartitionTopic
	s := newStatus(top, metrics.New().Ready)
	s.assign("logs", []int32{0, 1})
	if s.task(rep, 1) == nil || s.task(rep, 2) != nil || s.assignedCount() != 2 {
		t.Fatalf("after assigning logs 0,1: direct 1 %v, direct 2 %v, %d assigned", s.task(rep, 1), s.task(rep, 2), s.assignedCount())
	}
	s.window(rep, 1, "errors", nil, 3, 4, 100)
	if d := s.task(rep, 1); !d.Direct || d.OpenWindows != 3 || d.Topic != "logs" || d.Route != "errors" {
		t.Fatalf("direct task status %+v", d)
	}
	s.setLost(rep, 1, "changelog lost")
	if why := s.lostReason(); !strings.Contains(why, "changelog lost") {
		t.Fatalf("lost reason %q while the direct task is assigned", why)
	}
	s.revoke("logs", []int32{1})
	if s.task(rep, 1) != nil || s.lostReason() != "" {
		t.Fatalf("after revoking logs 1: direct task %v, lost reason %q", s.task(rep, 1), s.lostReason())
	}
}

func TestOwnerURL(t *testing.T) {
	for _, c := range []struct {
		tmpl  string
		owner stateful.Owner
		want  string
	}{
		{"http://{instance}.router-headless.ns.svc:8080", stateful.Owner{InstanceID: "router-1", ClientID: "x", Host: "/10.1.2.3"},
			"http://router-1.router-headless.ns.svc:8080/state/errors?key=a+b%26c"},
		{"https://{host}:8443/", stateful.Owner{ClientID: "pod-7", Host: "/10.1.2.3"}, "https://10.1.2.3:8443/state/errors?key=a+b%26c"},
		{"http://{host}:8080", stateful.Owner{ClientID: "pod-7", Host: "/fd00::7"}, "http://[fd00::7]:8080/state/errors?key=a+b%26c"},
		{"http://{instance}:8080/api", stateful.Owner{ClientID: "pod-7"}, "http://pod-7:8080/api/state/errors?key=a+b%26c"},
	} {
		if err := stateful.CheckOwnerURL(c.tmpl); err != nil {
			t.Errorf("%s: %v", c.tmpl, err)
		}
		if got := stateful.OwnerURL(c.tmpl, &c.owner, "errors", "a b&c"); got != c.want {
			t.Errorf("%s with %+v: %s, want %s", c.tmpl, c.owner, got, c.want)
		}
	}
	for _, bad := range []string{"http://router:8080", "{instance}:8080", "ftp://{host}/", "http://{host}:8080/?a=1", "http://{host}:8080/#x", "http://{host}:bad port"} {
		if err := stateful.CheckOwnerURL(bad); err == nil {
			t.Errorf("template %q accepted", bad)
		}
	}
	if _, err := New(compileVariant(t, []string{"127.0.0.1:9"}), WithOwnerURL("http://router:8080")); err == nil || !strings.Contains(err.Error(), "neither {instance} nor {host}") {
		t.Errorf("New with a template naming no owner: %v", err)
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
		s := newStatus(top, m.Ready)
		s.setJoined(true)
		s.assign(rep, []int32{0})
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.setLost(rep, 0, "changelog lost")
		}()
		s.readyAfterCommit(true, "app")
		<-done
		ok, why := s.ready.ok, s.ready.reason
		if ok || why != "changelog lost" || testutil.ToFloat64(m.Ready) != 0 {
			t.Fatalf("round %d: ready %v (%q), gauge %v after a commit and a changelog loss", i, ok, why, testutil.ToFloat64(m.Ready))
		}
	}
	s := newStatus(top, metrics.New().Ready)
	s.readyAfterCommit(true, "app")
	if ok, why := s.ready.ok, s.ready.reason; ok || !strings.Contains(why, "joining consumer group app") {
		t.Fatalf("ready %v (%q) before the group is joined", ok, why)
	}
	s.setJoined(true)
	s.readyAfterCommit(true, "app")
	if ok, _ := s.ready.ok, s.ready.reason; !ok {
		t.Fatal("not ready after a commit in a joined group with nothing stopped")
	}
}
