package itest

import (
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
)

// Every router in these tests uses a 6s session timeout (the broker's
// minimum) unless a test says otherwise, so a killed or frozen member's
// partitions move in seconds rather than franz-go's default 45s, and a
// short transaction timeout, so a dead process's open transaction blocks
// read_committed readers only briefly.
var fastGroup = []string{"--session-timeout", "6s", "--transaction-timeout", "5s"}

// killLoop produces the scenario's events at rate while one router
// instance is killed with SIGKILL kills times and restarted each time,
// then waits for lag 0 and stops the last process gracefully. Every third
// kill lands during start-up (restore, group join); the others land after
// the restarted process has committed progress, so a transaction is open.
func (s *scenario) killLoop(rate float64, kills int, extra ...string) {
	p := s.startProducer(rate)
	r := s.startRouter("x", append(append([]string{}, fastGroup...), extra...)...)
	r = s.killRestartLoop(p, r, kills)
	s.waitCaughtUp(p, 4*time.Minute, r)
	r.stop(40 * time.Second)
}

// killRestartLoop kills r with SIGKILL kills times while p produces, and
// restarts it each time; every third kill lands during
// start-up (state restore, group join), the others 0–1.5 s after the
// restarted process committed progress, with a transaction open.
func (s *scenario) killRestartLoop(p *producer, r *router, kills int) *router {
	t := s.t
	for k := range kills {
		_, before := s.committed()
		var when string
		if k%3 == 1 {
			d := s.randDur(300*time.Millisecond, 3*time.Second)
			time.Sleep(d)
			when = fmt.Sprintf("%s after start", d.Round(time.Millisecond))
		} else {
			s.waitProgress(p, before, 90*time.Second, r)
			d := s.randDur(0, 1500*time.Millisecond)
			time.Sleep(d)
			when = fmt.Sprintf("%s after progress", d.Round(time.Millisecond))
		}
		r.kill9()
		_, c := s.committed()
		t.Logf("kill -9 #%d of %s, %s (up %s); committed %d of %d, produced %d",
			k+1, r.id, when, time.Since(r.started).Round(time.Millisecond), c, len(s.events), p.acked.Load())
		r = r.restart()
	}
	return r
}

// TestKill9ExactlyOnce: 200,000 records, one router instance killed with
// SIGKILL at random moments 6 times and restarted each time; every output
// topic read read_committed (by franz-go and by kcat) holds each input
// exactly once on the oracle's route.
func TestKill9ExactlyOnce(t *testing.T) {
	s := newScenario(t, "kill9_exactly_once", 200_000)
	s.killLoop(4000, 6)

	recs := s.readBack(true, 2*time.Minute)
	tl := s.tally(recs)
	s.requireExactlyOnce(tl)
	aborted := len(s.readBack(false, 2*time.Minute)) - tl.records

	// kcat (librdkafka) as an independent read_committed client.
	goIDs := map[string]map[string]int{}
	for _, r := range recs {
		if goIDs[r.topic] == nil {
			goIDs[r.topic] = map[string]int{}
		}
		goIDs[r.topic][gen.IDOf(r.key, r.value)]++
	}
	kcatRecords, diff := 0, 0
	for _, tp := range s.outputs {
		k := s.kcatIDs(tp)
		for id, n := range k {
			kcatRecords += n
			if goIDs[tp][id] != n {
				diff++
			}
		}
		for id := range goIDs[tp] {
			if _, ok := k[id]; !ok {
				diff++
			}
		}
		if got := sum(k); got != s.want[tp] {
			t.Errorf("kcat read %d records from %s, the oracle says %d", got, tp, s.want[tp])
		}
	}
	if diff > 0 {
		t.Errorf("kcat and the franz-go reader disagree on %d ids", diff)
	}
	s.report(tl, fmt.Sprintf("aborted_invisible=%d kcat_records=%d kcat_diff=%d", aborted, kcatRecords, diff))
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestScaleOutInExactlyOnce: three routers in one group; a fourth joins,
// one leaves with SIGTERM, one is killed with SIGKILL (its transactional id
// never comes back, so the broker's transaction timeout aborts its open
// transaction); every rebalance aborts open transactions, and the outputs
// still hold each input exactly once.
func TestScaleOutInExactlyOnce(t *testing.T) {
	s := newScenario(t, "scale_out_in_exactly_once", 100_000)
	p := s.startProducer(2500)
	a := s.startRouter("a", fastGroup...)
	b := s.startRouter("b", fastGroup...)
	c := s.startRouter("c", fastGroup...)
	s.waitMembers(3, 60*time.Second)
	_, n := s.committed()
	n = s.waitProgress(p, n, time.Minute, a, b, c)
	time.Sleep(s.randDur(0, 2*time.Second))

	d := s.startRouter("d", fastGroup...)
	s.waitMembers(4, 60*time.Second)
	n = s.waitProgress(p, n, time.Minute, a, b, c, d)
	t.Logf("scaled out to 4 members; committed %d", n)
	time.Sleep(s.randDur(0, 2*time.Second))

	took := a.stop(40 * time.Second)
	t.Logf("router a left with SIGTERM in %s", took.Round(time.Millisecond))
	s.waitMembers(3, 60*time.Second)
	n = s.waitProgress(p, n, time.Minute, b, c, d)
	time.Sleep(s.randDur(0, 2*time.Second))

	b.kill9()
	t.Logf("router b killed with SIGKILL; committed %d", n)
	s.waitMembers(2, 60*time.Second)
	s.waitCaughtUp(p, 3*time.Minute, c, d)
	c.stop(40 * time.Second)
	d.stop(40 * time.Second)

	tl, aborted := s.verifyExactlyOnce()
	s.report(tl, fmt.Sprintf("processes=4 aborted_invisible=%d", aborted))
}

// TestZombieFencedExactlyOnce: two kinds of zombie, both frozen with
// SIGSTOP in the middle of a transaction and thawed with SIGCONT after
// their partitions have moved on:
//
//  1. Router a is frozen until its session expires and router b owns and
//     commits a's partitions. a's transaction is still open when it thaws
//     (its transaction timeout, 20s, is longer than the freeze), so only
//     the group stops its late writes: a heartbeat answered
//     UNKNOWN_MEMBER_ID, or a TxnOffsetCommit refused for its stale
//     generation (KIP-447), and the transaction aborts.
//  2. Router b is frozen and at once replaced by a new process with the
//     same instance id, hence the same transactional id (what an
//     orchestrator does when it gives up on a pod). The replacement's
//     InitProducerID bumps the epoch: the old b's open transaction is
//     aborted, and when it thaws its writes are refused as fenced. It is
//     then killed, as the orchestrator would.
func TestZombieFencedExactlyOnce(t *testing.T) {
	s := newScenario(t, "zombie_exactly_once", 100_000)
	// Half the input for each kind, so input flows while each zombie
	// thaws however long the first one took.
	half := len(s.events) / 2
	p := s.startProducerRange(0, half, 2500)
	a := s.startRouter("a", "--session-timeout", "6s", "--transaction-timeout", "20s")
	b := s.startRouter("b", fastGroup...)
	s.waitMembers(2, 60*time.Second)
	_, n := s.committed()
	s.waitProgress(p, n, time.Minute, a, b)
	aParts := a.tasks()
	if len(aParts) == 0 {
		t.Fatal("router a owns no partitions")
	}
	time.Sleep(s.randDur(0, time.Second))

	// 1. Frozen past the session timeout. Frozen inside a commit, after its
	// TxnOffsetCommit, a's pending offsets keep b from fetching them
	// (KIP-447) until a's transaction times out: up to 20s more.
	a.signal(syscall.SIGSTOP)
	frozen := time.Now()
	at, _ := s.committed()
	t.Logf("router a (partitions %v) frozen with SIGSTOP", aParts)
	s.waitMembers(1, 60*time.Second) // a's session expired: b owns everything ...
	// ... and commits on a's partitions (after a's transaction timeout
	// at worst: 20s).
	waitFor(t, 2*time.Minute, fmt.Sprintf("router b committing on a's partitions %v", aParts), func() (bool, string) {
		now, _ := s.committed()
		for _, part := range aParts {
			if now[part] <= at[part] {
				return false, fmt.Sprintf("committed %v, at the freeze %v", now, at)
			}
		}
		return true, ""
	})
	logAt := a.logSize()
	a.signal(syscall.SIGCONT)
	frozenFor := time.Since(frozen)
	t.Logf("router a thawed with SIGCONT after %s; b had committed on its partitions", frozenFor.Round(time.Millisecond))
	s.waitMembers(2, 90*time.Second) // the zombie aborts, rebuilds its session, rejoins
	fencedBy, zombieAborted := fenceSignal(t, a, logAt)
	n = s.waitProgress(p, n, time.Minute, a, b)

	// 2. Frozen and replaced by the same instance id.
	p.wait(t, 2*time.Minute)
	p = s.startProducerRange(half, len(s.events), 1500)
	s.waitProgress(p, int64(half), time.Minute, a, b)
	before := s.memberIDs()
	b.signal(syscall.SIGSTOP)
	b2 := s.startRouter("b", fastGroup...)
	s.restarts++
	t.Logf("router b frozen with SIGSTOP and replaced by a new process with instance id b")
	s.waitMembersChanged(2, before, 60*time.Second)
	s.waitProgress(p, n, time.Minute, a, b2)
	logAt = b.logSize()
	b.signal(syscall.SIGCONT)
	// Polled often: b is killed as soon as it knows it is fenced.
	waitEvery(t, 20*time.Millisecond, time.Minute, "the thawed router b logging its fencing", func() (bool, string) {
		return len(b.logLines(logAt, "session failed", "FENCED", "INVALID_PRODUCER_EPOCH")) > 0,
			fmt.Sprintf("no such line yet; input still flowing: %v", !p.finished())
	})
	b.kill9() // before it rebuilds its session and fences the replacement in turn
	replacedBy, replacedAborted := fenceSignal(t, b, logAt)

	s.waitCaughtUp(p, 3*time.Minute, a, b2)
	a.stop(40 * time.Second)
	b2.stop(40 * time.Second)
	tl, aborted := s.verifyExactlyOnce()
	s.report(tl, fmt.Sprintf("frozen=%s zombie_fenced_by=%s zombie_aborted_records=%d replaced_fenced_by=%s replaced_aborted_records=%d aborted_invisible=%d",
		frozenFor.Round(100*time.Millisecond), fencedBy, zombieAborted, replacedBy, replacedAborted, aborted))
}

// fenceSignal reads a thawed zombie's log after offset: the first sign it
// got of being fenced or dropped, and how many records its aborted
// transactions held. It fails the test when there is no sign at all.
func fenceSignal(t *testing.T, r *router, offset int64) (string, int) {
	t.Helper()
	lines := r.logLines(offset, "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "FENCED", "INVALID_PRODUCER_EPOCH",
		"partitions lost", "session failed", "transaction aborted")
	for i, l := range lines {
		if i == 10 {
			t.Logf("router %s after SIGCONT: ... %d more lines", r.id, len(lines)-i)
			break
		}
		t.Logf("router %s after SIGCONT: %s", r.id, l)
	}
	var signals []string
	aborted := 0
	for _, l := range lines {
		for _, sig := range []string{"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"} {
			if strings.Contains(l, sig) && !slices.Contains(signals, sig) {
				signals = append(signals, sig)
			}
		}
		if strings.Contains(l, "transaction aborted") {
			if _, n, ok := strings.Cut(l, " records="); ok {
				var k int
				fmt.Sscan(n, &k)
				aborted += k
			}
		}
	}
	if len(signals) == 0 && len(lines) > 0 {
		signals = []string{"lost"}
	}
	if len(signals) == 0 {
		t.Errorf("router %s logged no fencing or loss after SIGCONT", r.id)
		signals = []string{"none"}
	}
	return strings.Join(signals, "+"), aborted
}

// TestBrokerBounceExactlyOnce: `scripts/kafka.sh restart` (data kept)
// while a router works; /readyz must say 503 while the broker is away and
// 200 again without help afterwards.
func TestBrokerBounceExactlyOnce(t *testing.T) {
	s := newScenario(t, "broker_bounce_exactly_once", 100_000)
	out, err := exec.Command("../scripts/kafka.sh", "brokers").Output()
	if err != nil || strings.TrimSpace(string(out)) != strings.Join(s.brokers, ",") {
		t.Skipf("%s=%s is not the broker scripts/kafka.sh manages (%q, %v): cannot bounce it",
			envBrokers, strings.Join(s.brokers, ","), strings.TrimSpace(string(out)), err)
	}
	// Whatever happens below, leave the broker running for the next test
	// (a no-op when it is up).
	t.Cleanup(func() {
		if err := kafkaErr("start"); err != nil {
			t.Error(err)
		}
	})
	p := s.startProducer(2500)
	r := s.startRouter("x", fastGroup...)
	r.waitReady(60 * time.Second)
	_, n := s.committed()
	s.waitProgress(p, n, time.Minute, r)
	time.Sleep(s.randDur(0, 2*time.Second))

	type result struct {
		out []byte
		err error
	}
	restarted := make(chan result, 1)
	bounceDone := make(chan struct{})
	bounceStart := time.Now()
	go func() {
		defer close(bounceDone)
		out, err := exec.Command("../scripts/kafka.sh", "restart").CombinedOutput()
		restarted <- result{out, err}
	}()
	// Never interrupt kafka.sh half-way (the broker would stay down): a
	// failing test waits for the restart to end (registered after the
	// start above, so it runs before it).
	t.Cleanup(func() { <-bounceDone })
	var (
		notReady    int
		firstDown   time.Duration
		reasons     = map[string]bool{}
		bounceTook  time.Duration
		bounceError error
	)
	for done := false; !done; {
		select {
		case res := <-restarted:
			done, bounceTook, bounceError = true, time.Since(bounceStart), res.err
			if res.err != nil {
				t.Logf("kafka.sh restart output:\n%s", res.out)
			}
		case <-time.After(100 * time.Millisecond):
			if r.exited() {
				t.Fatalf("router exited during the broker bounce: %s", r.cmd.ProcessState)
			}
			code, body := r.readyz()
			if code == http.StatusServiceUnavailable {
				if notReady == 0 {
					firstDown = time.Since(bounceStart)
				}
				notReady++
				if len(reasons) < 5 {
					reasons[body] = true
				}
			}
		}
	}
	if bounceError != nil {
		t.Fatalf("scripts/kafka.sh restart: %v", bounceError)
	}
	t.Logf("broker bounced in %s; /readyz answered 503 %d times (first %s after the restart began): %v",
		bounceTook.Round(time.Millisecond), notReady, firstDown.Round(time.Millisecond), keys(reasons))
	if notReady == 0 {
		t.Errorf("/readyz never reported 503 while the broker was down")
	}
	recoverStart := time.Now()
	r.waitReady(2 * time.Minute)
	recovered := time.Since(recoverStart)
	t.Logf("/readyz back to 200 %s after the broker was up", recovered.Round(time.Millisecond))

	s.waitCaughtUp(p, 3*time.Minute, r)
	repairs := strandedRepairs(t, r)

	// Idle: no input, so no transaction carries records and nothing but
	// the group session can notice the broker is gone.
	down := time.Now()
	stopped := make(chan error, 1)
	stopDone := make(chan struct{})
	go func() { defer close(stopDone); stopped <- kafkaErr("stop") }()
	t.Cleanup(func() { <-stopDone })
	idleNotReady := time.Duration(-1)
	for time.Since(down) < 60*time.Second {
		if code, _ := r.readyz(); code == http.StatusServiceUnavailable {
			idleNotReady = time.Since(down)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	stopTook := time.Since(down)
	kafka(t, "start")
	if idleNotReady < 0 {
		t.Errorf("idle router: /readyz still 200 60s after the broker stop began")
	} else {
		t.Logf("idle router: /readyz 503 %s after the broker stop began (the stop took %s)",
			idleNotReady.Round(time.Millisecond), stopTook.Round(time.Millisecond))
	}
	r.waitReady(2 * time.Minute)
	s.checkWritten(r)

	r.stop(40 * time.Second)
	tl, aborted := s.verifyExactlyOnce()
	s.report(tl, fmt.Sprintf("bounce=%s not_ready_polls=%d ready_again_after=%s idle_not_ready_after=%s aborted_invisible=%d stranded_offsets_repairs=%d",
		bounceTook.Round(100*time.Millisecond), notReady, recovered.Round(100*time.Millisecond),
		idleNotReady.Round(100*time.Millisecond), aborted, repairs))
}

// checkWritten compares, for every output topic, the router's
// sidestream_route_records_written_total with the records a
// read_committed reader finds there: the transactions the bounce aborted
// had records the broker acknowledged, and they must not count. r is the
// only router that wrote them (the counter is per process).
func (s *scenario) checkWritten(r *router) {
	s.t.Helper()
	for route, topic := range s.topicOf {
		want := float64(len(s.readTopics([]string{topic}, true, time.Minute)))
		var got float64
		// The last commit's counts are added just after the commit.
		waitFor(s.t, 30*time.Second, "the written count of "+topic, func() (bool, string) {
			got = r.metric(s.t, metrics.NameRouteWritten, fmt.Sprintf(`topic=%q`, topic))
			return got == want, fmt.Sprintf("route %s topic %s: written metric %v, read back %v", route, topic, got, want)
		})
		s.t.Logf("route %s topic %s: written %v = read back %v", route, topic, got, want)
	}
}

// kafka runs scripts/kafka.sh with args and fails the test on error.
func kafka(t *testing.T, args ...string) {
	t.Helper()
	if err := kafkaErr(args...); err != nil {
		t.Fatal(err)
	}
}

func kafkaErr(args ...string) error {
	out, err := exec.Command("../scripts/kafka.sh", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/kafka.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestKill9AtLeastOnce: the kill loop under --guarantee at_least_once.
// Nothing may be lost; duplicates are allowed and counted.
func TestKill9AtLeastOnce(t *testing.T) {
	s := newScenario(t, "kill9_at_least_once", 100_000)
	s.killLoop(2500, 5, "--guarantee", "at_least_once")
	tl := s.tally(s.readBack(true, 2*time.Minute))
	s.requireNoLoss(tl)
	for _, tp := range s.outputs {
		if tl.byTopic[tp] < s.want[tp] {
			t.Errorf("topic %s: %d records, fewer than the oracle's %d", tp, tl.byTopic[tp], s.want[tp])
		}
	}
	s.report(tl, fmt.Sprintf("duplicate_ids=%d", tl.dupIDs))
}

// TestGracefulStopExactlyOnce: SIGTERM under load ends the open
// transaction and leaves the group: the process exits 0 well within the
// shutdown timeout, the group is empty at once (its session timeout is
// franz-go's 45s default, so only an explicit leave empties it that fast)
// and no output partition has an open transaction (its transaction timeout
// is 30s, so only an explicit end settles them that fast). A restart
// continues with no duplicate and no gap.
func TestGracefulStopExactlyOnce(t *testing.T) {
	s := newScenario(t, "graceful_stop_exactly_once", 100_000)
	p := s.startProducer(0) // as fast as possible: a backlog, so transactions are large
	args := []string{"--transaction-timeout", "30s"}
	r := s.startRouter("x", args...)
	_, n := s.committed()
	s.waitProgress(p, n, time.Minute, r)
	time.Sleep(s.randDur(0, 300*time.Millisecond))

	logAt := r.logSize()
	// Exit code 0 proves the router ended within its own shutdown_timeout
	// (30s; past it the router exits 1); the test's ceiling leaves room
	// for a loaded machine to deliver the signal and reap the process.
	took := r.stop(45 * time.Second)
	t.Logf("SIGTERM: exit 0 in %s", took.Round(time.Millisecond))
	for _, want := range []string{"transaction ended, leaving the group", "router stopped"} {
		if len(r.logLines(logAt, want)) == 0 {
			t.Errorf("router log after SIGTERM lacks %q", want)
		}
	}
	g, err := s.group()
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Members) != 0 || g.State != "Empty" {
		t.Errorf("group right after the stop: state %s, %d members; want Empty, 0", g.State, len(g.Members))
	}
	settle := time.Now()
	// Well under the 30s transaction timeout: only the router's own end
	// of its transaction settles the outputs this soon, even when a
	// loaded broker is slow to write the markers.
	s.waitSettled(10 * time.Second)
	settled := time.Since(settle)
	_, stoppedAt := s.committed()
	lag := p.acked.Load() - stoppedAt
	t.Logf("after the stop: group %s, outputs settled in %s, committed %d of %d (produced %d, lag %d)",
		g.State, settled.Round(time.Millisecond), stoppedAt, len(s.events), p.acked.Load(), lag)
	if lag <= 0 {
		t.Errorf("the stop came after all input was processed: not a stop under load")
	}

	r = r.restart()
	s.waitCaughtUp(p, 3*time.Minute, r)
	r.stop(45 * time.Second)
	tl, aborted := s.verifyExactlyOnce()
	s.report(tl, fmt.Sprintf("stop_took=%s lag_at_stop=%d aborted_invisible=%d", took.Round(time.Millisecond), lag, aborted))
}

// strandedRepairs reads how often the router re-ended its last transaction
// to settle offsets a lost transaction marker left pending (a broker
// restarted mid-commit can complete a transaction without writing its
// marker to __consumer_offsets; see internal/runtime/stranded.go).
func strandedRepairs(t *testing.T, r *router) int {
	t.Helper()
	code, body, err := r.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	n := 0
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, metrics.NameStrandedRepairs+"{") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			n += int(v)
		}
	}
	return n
}
