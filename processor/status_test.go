package processor

import (
	"strings"
	"testing"
)

// TestStatusDirectTasks: a direct window task lives while its input
// partition is assigned, and a changelog loss on it keeps the router not
// ready exactly that long.
func TestStatusDirectTasks(t *testing.T) {
	top := compileVariant(t, []string{"127.0.0.1:9"}, [2]string{"      emit: update\n", "      emit: update\n      repartition: false\n"})
	rep := top.Routes[0].Window.RepartitionTopic
	s := newStatus(top)
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
