package itest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
)

// TestOutputTopicDeletedExactlyOnce deletes an output topic under a
// running router. The router must neither exit nor spin: each transaction
// that writes to the missing topic aborts (counted as produce_error), the
// batch waits a second and is tried again, and /readyz says why. Once an
// operator recreates the topic the router goes on by itself, and every
// event is then exactly once on its route, except the events the deletion
// itself destroyed (committed to the topic before it was deleted), which
// must be missing exactly, none more.
func TestOutputTopicDeletedExactlyOnce(t *testing.T) {
	s := newScenario(t, "output_deleted_exactly_once", 40_000)
	half := len(s.events) / 2
	victim := s.topicOf["warn"]
	p := s.startProducerRange(0, half, 0)
	r := s.startRouter("x", fastGroup...)
	r.waitReady(60 * time.Second)
	p.wait(t, time.Minute)
	s.waitCommittedAtLeast(int64(half), 2*time.Minute, r)

	// Nothing is in flight now: what the victim holds is exactly what the
	// deletion destroys.
	destroyed := map[string]bool{}
	for _, rec := range s.readTopics([]string{victim}, true, time.Minute) {
		destroyed[gen.IDOf(rec.Key, rec.Value)] = true
	}
	if len(destroyed) == 0 {
		t.Fatalf("topic %s holds no record before the deletion: nothing to test", victim)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := s.adm.DeleteTopics(ctx, victim)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete %s: %v", victim, err)
	}
	t.Logf("deleted %s holding %d committed records", victim, len(destroyed))

	// The rest of the input arrives while the topic is missing.
	p2 := s.startProducerRange(half, len(s.events), 0)
	p2.wait(t, time.Minute)

	var (
		reason    string
		cpuBefore = r.cpu(t)
		watchFrom = time.Now()
	)
	notReady := func() {
		if r.exited() {
			t.Fatalf("router exited with the output topic missing: %s\n%s", r.cmd.ProcessState, tail(r.logPath, 20))
		}
		if code, body := r.readyz(); code == http.StatusServiceUnavailable && reason == "" {
			reason = body
		}
	}
	// The CPU measurement: a fixed 20 s window on purpose.
	for time.Since(watchFrom) < 20*time.Second {
		notReady()
		time.Sleep(200 * time.Millisecond)
	}
	cpu := r.cpu(t) - cpuBefore
	// A slow machine may need longer than the window to show both signs.
	var aborts float64
	waitFor(t, 90*time.Second, "/readyz 503 and a produce_error abort with "+victim+" missing", func() (bool, string) {
		notReady()
		aborts = r.metric(t, metrics.NameAborts, `reason="produce_error"`)
		return reason != "" && aborts >= 1, fmt.Sprintf("/readyz %q, produce_error aborts %v", reason, aborts)
	})
	t.Logf("20 s with %s missing: /readyz %s; produce_error aborts %v; CPU %s", victim, reason, aborts, cpu)
	if !strings.Contains(reason, victim) && !strings.Contains(reason, "UNKNOWN_TOPIC") {
		t.Errorf("/readyz never named the missing topic or the error: %q", reason)
	}
	// Each retry waits at least a second; the client's own metadata
	// retries wait too. A spinning loop burns a core (20 s).
	if cpu > 8*time.Second {
		t.Errorf("router used %s of CPU in 20 s with the topic missing: it spins", cpu)
	}

	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	if _, err := s.adm.CreateTopic(ctx2, inputPartitions, 1, nil, victim); err != nil {
		t.Fatalf("recreate %s: %v", victim, err)
	}
	recreated := time.Now()
	s.waitCaughtUp(p2, 3*time.Minute, r)
	t.Logf("caught up %s after %s was recreated", time.Since(recreated).Round(100*time.Millisecond), victim)
	r.stop(40 * time.Second)

	tl := s.tally(s.readBack(true, 2*time.Minute))
	missingOther := 0
	byRoute := map[string]int{}
	for id, ev := range s.byID {
		if tl.seen[id] == 0 && !destroyed[id] {
			missingOther++
			byRoute[gen.RouteOf[ev.Kind]]++
		}
	}
	if missingOther > 0 {
		t.Logf("missing beyond the destroyed, by route: %v", byRoute)
	}
	for id := range destroyed {
		if tl.seen[id] != 0 {
			t.Errorf("event %s was on the deleted topic and is back %d times: it was processed again", id, tl.seen[id])
			break
		}
	}
	if missingOther > 0 || tl.dups > 0 || tl.misrouted > 0 || tl.unknown > 0 {
		t.Errorf("%d missing beyond the %d the deletion destroyed, %d duplicates, %d misrouted, %d unknown",
			missingOther, len(destroyed), tl.dups, tl.misrouted, tl.unknown)
	}
	s.report(tl, fmt.Sprintf("deleted_topic=%s destroyed=%d produce_error_aborts=%v cpu_while_missing=%s",
		victim, len(destroyed), aborts, cpu.Round(10*time.Millisecond)))
}

// waitCommittedAtLeast waits until the group's committed offsets cover n
// input records.
func (s *scenario) waitCommittedAtLeast(n int64, limit time.Duration, live ...*router) {
	s.t.Helper()
	waitFor(s.t, limit, fmt.Sprintf("group commits on %d input records", n), func() (bool, string) {
		_, sum := s.committed()
		if sum >= n {
			return true, ""
		}
		requireRunning(s.t, live...)
		return false, fmt.Sprintf("committed %d", sum)
	})
}

// cpu is the router process's user+system CPU time so far.
func (r *router) cpu(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("router CPU: %v", err)
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ
	return time.Duration(utime+stime) * time.Second / ticks
}

// metric sums the router's /metrics samples of name whose labels contain
// match ("" for all).
func (r *router) metric(t testing.TB, name, match string) float64 {
	t.Helper()
	code, body, err := r.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name) || !strings.Contains(line, match) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // another metric with this prefix
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// TestBrokerDownAtStartExactlyOnce starts the router while the broker is
// stopped: it must wait without spinning, say why on /readyz, and proceed
// by itself when the broker comes, then finish exactly once.
func TestBrokerDownAtStartExactlyOnce(t *testing.T) {
	s := newScenario(t, "broker_down_at_start_exactly_once", 20_000)
	out, err := exec.Command("../scripts/kafka.sh", "brokers").Output()
	if err != nil || strings.TrimSpace(string(out)) != strings.Join(s.brokers, ",") {
		t.Skipf("%s=%s is not the broker scripts/kafka.sh manages (%q, %v): cannot stop it",
			envBrokers, strings.Join(s.brokers, ","), strings.TrimSpace(string(out)), err)
	}
	t.Cleanup(func() {
		if err := kafkaErr("start"); err != nil {
			t.Error(err)
		}
	})
	p := s.startProducer(0)
	p.wait(t, time.Minute)
	kafka(t, "stop")

	r := s.startRouter("x", fastGroup...)
	// Started (its API answers) and waiting: only then does the CPU
	// window begin, so a slow start-up is not counted as spinning.
	waitFor(t, time.Minute, "/readyz 503 saying the router waits for the brokers", func() (bool, string) {
		if r.exited() {
			t.Fatalf("router exited with the broker down: %s\n%s", r.cmd.ProcessState, tail(r.logPath, 20))
		}
		code, body := r.readyz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "waiting for brokers"), fmt.Sprintf("%d %s", code, body)
	})
	// The measurement: 10 s of waiting must cost little CPU (a fixed
	// window on purpose; a slower machine only lowers the rate).
	cpuBefore := r.cpu(t)
	for watchFrom := time.Now(); time.Since(watchFrom) < 10*time.Second; time.Sleep(200 * time.Millisecond) {
		if r.exited() {
			t.Fatalf("router exited with the broker down: %s\n%s", r.cmd.ProcessState, tail(r.logPath, 20))
		}
	}
	cpu := r.cpu(t) - cpuBefore
	code, reason := r.readyz()
	if code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz %d %s with the broker down", code, reason)
	}
	t.Logf("broker down: /readyz 503 %s; CPU %s in 10 s", reason, cpu)
	if !strings.Contains(reason, "waiting for brokers") {
		t.Errorf("/readyz does not say it waits for the brokers any more: %s", reason)
	}
	if cpu > 2*time.Second {
		t.Errorf("router used %s of CPU in 10 s waiting for the broker: it spins", cpu)
	}
	up := time.Now()
	kafka(t, "start")
	r.waitReady(2 * time.Minute)
	readyAfter := time.Since(up)
	s.waitCaughtUp(p, 2*time.Minute, r)
	r.stop(40 * time.Second)
	tl, aborted := s.verifyExactlyOnce()
	s.report(tl, fmt.Sprintf("ready_after_broker_start=%s cpu_while_waiting=%s aborted_invisible=%d",
		readyAfter.Round(100*time.Millisecond), cpu.Round(10*time.Millisecond), aborted))
}
