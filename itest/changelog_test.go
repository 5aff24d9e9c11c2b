package itest

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sidestream/sidestream/internal/metrics"
)

// TestChangelogLossFails: a window route runs and commits state; between
// two runs the records of its changelog are deleted (DeleteRecords up to
// the end, what retention on a non-compacted changelog does). The next
// run must not process stage two: it stays up, /readyz answers 503
// naming the changelog topic, the partition and the offsets, the loss is
// counted and logged at ERROR, and no repartition offset moves. (Kafka
// refuses DeleteRecords on a compact-only topic, so the test first adds
// the delete policy, as an operator setting retention on it would.) Restarted
// with state.on_changelog_loss: start_empty, the run proceeds to lag 0 and
// counts the loss as accepted.
func TestChangelogLossFails(t *testing.T) {
	base := newScenario(t, "changelog_loss", 6_000)
	w := newWindowRun(base, "cl", "aligned")
	half := len(base.events) / 2
	p := base.startProducerRange(0, half, 0)
	r := w.startRouter("x", fastGroup...)
	r.waitReady(time.Minute)
	all := w.events
	w.events = all[:half] // done means this half
	w.waitWindowDone(p, 2*time.Minute, r)
	w.events = all
	r.stop(40 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Kafka refuses DeleteRecords on a compact-only topic: the loss comes
	// with a delete policy (retention), as when an operator adds one.
	policy := "compact,delete"
	ac, err := w.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &policy}}, w.changelog)
	if err == nil {
		_, err = ac.On(w.changelog, nil)
	}
	if err != nil {
		t.Fatalf("cleanup.policy of %s: %v", w.changelog, err)
	}
	ends, err := w.adm.ListEndOffsets(ctx, w.changelog)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := w.adm.DeleteRecords(ctx, ends.Offsets())
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete records of %s: %v", w.changelog, err)
	}
	before, _ := w.adm.FetchOffsets(ctx, w.app)

	p2 := base.startProducerRange(half, len(base.events), 0)
	p2.wait(t, time.Minute)
	r2 := w.startRouter("x", fastGroup...)
	var reason string
	cpuBefore, watchFrom := time.Duration(0), time.Time{}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if r2.exited() {
			t.Fatalf("router exited on a changelog loss: %s\n%s", r2.cmd.ProcessState, tail(r2.logPath, 20))
		}
		code, body := r2.readyz()
		if code == http.StatusServiceUnavailable && strings.Contains(body, "lost state") {
			reason = body
			if watchFrom.IsZero() {
				cpuBefore, watchFrom = r2.cpu(t), time.Now()
			}
		}
		if !watchFrom.IsZero() && time.Since(watchFrom) > 10*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never reported the loss; last %d %q\n%s", code, body, tail(r2.logPath, 20))
		}
	}
	cpu := r2.cpu(t) - cpuBefore
	for _, want := range []string{"changelog " + w.changelog + " partition ", "records before offset", "log start offset", "end offset", "start_empty"} {
		if !strings.Contains(reason, want) {
			t.Errorf("/readyz %q does not say %q", reason, want)
		}
	}
	if n := r2.metric(t, metrics.NameChangelogLoss, `action="fail"`); n < 1 {
		t.Errorf("%s{action=fail} = %v", metrics.NameChangelogLoss, n)
	}
	if !logHas(r2, "ERROR", "lost state") {
		t.Errorf("no ERROR log line about the loss\n%s", tail(r2.logPath, 20))
	}
	if cpu > 3*time.Second {
		t.Errorf("router used %s of CPU in 10 s waiting on a changelog loss: it spins", cpu)
	}
	after, _ := w.adm.FetchOffsets(ctx, w.app)
	for _, o := range before.Sorted() {
		if o.Topic != w.repartition {
			continue
		}
		if a, ok := after.Lookup(o.Topic, o.Partition); ok && a.At != o.At {
			t.Errorf("%s[%d] committed %d -> %d past a changelog loss", o.Topic, o.Partition, o.At, a.At)
		}
	}
	r2.stop(40 * time.Second)
	t.Logf("fail: /readyz %q; CPU %s in 10 s", reason, cpu)

	// start_empty: the same application goes on.
	y, err := os.ReadFile(w.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.config, append(y, "state:\n  on_changelog_loss: start_empty\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	r3 := w.startRouter("x", fastGroup...)
	r3.waitReady(time.Minute)
	w.waitWindowDone(p2, 2*time.Minute, r3)
	accepted := r3.metric(t, metrics.NameChangelogLoss, `action="start_empty"`)
	if accepted < 1 {
		t.Errorf("%s{action=start_empty} = %v", metrics.NameChangelogLoss, accepted)
	}
	if !logHas(r3, "WARN", "lost state") {
		t.Errorf("no WARN log line about the accepted loss")
	}
	r3.stop(40 * time.Second)
	t.Logf("scenario=changelog_loss fail_readyz_ok=true cpu_while_failed=%s start_empty_partitions=%v", cpu.Round(10*time.Millisecond), accepted)
}

// logHas reports whether a line of r's log at level says what.
func logHas(r *router, level, what string) bool {
	for _, l := range r.logLines(0, what) {
		if strings.Contains(l, "level="+level) || strings.Contains(l, `"level":"`+level+`"`) {
			return true
		}
	}
	return false
}
