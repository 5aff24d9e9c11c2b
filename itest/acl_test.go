package itest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sidestream/sidestream/internal/metrics"
)

// aclDenied runs under TestSecurity, on its broker (ACLs enabled, every
// resource allowed until an ACL names it). The router writes over
// SCRAM-SHA-512 as saslUser; mid-run a DENY WRITE ACL on one output topic
// refuses its writes. While it stands: no transaction that writes there
// commits (the input's committed offsets stay short of the end and the
// topic gains no committed record), /readyz names the topic and the
// authorization failure, sidestream_authorization_refused_total counts
// the aborted transactions, and the process stays up and nearly idle.
// Once the ACL is deleted the router goes on by itself, and the outputs
// read read_committed equal the oracle exactly.
func aclDenied(t *testing.T, b *secureBroker) {
	s := newSecureScenario(t, b, "security_acl_denied", 20_000)
	s.appendTopology("security:\n  protocol: sasl_plaintext\n  sasl:\n    mechanism: SCRAM-SHA-512\n    username: " + saslUser + "\n")
	env := []string{"SIDESTREAM_SASL_PASSWORD=" + saslPassword}
	half := len(s.events) / 2
	victim := s.topicOf["warn"]
	p := s.startProducerRange(0, half, 0)
	r := s.startRouterEnv("x", b.sasl, env, fastGroup...)
	r.waitReady(60 * time.Second)
	p.wait(t, time.Minute)
	s.waitCommittedAtLeast(int64(half), 2*time.Minute, r)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	deny := kadm.NewACLs().Deny("User:" + saslUser).DenyHosts().Topics(victim).
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite)
	if res, err := s.adm.CreateACLs(ctx, deny); err != nil || res[0].Err != nil {
		t.Fatalf("create the DENY WRITE ACL on %s: %v %v", victim, err, res)
	}
	victimBefore := len(s.readTopics([]string{victim}, true, time.Minute))

	p2 := s.startProducerRange(half, len(s.events), 0)
	p2.wait(t, time.Minute)
	var (
		reason    string
		cpuBefore = r.cpu(t)
		watchFrom = time.Now()
	)
	denied := func() {
		if r.exited() {
			t.Fatalf("router exited with writes refused: %s\n%s", r.cmd.ProcessState, tail(r.logPath, 20))
		}
		if code, body := r.readyz(); code == http.StatusServiceUnavailable && strings.Contains(body, "authoriz") {
			reason = body
		}
	}
	// The CPU measurement: a fixed 20 s window on purpose.
	for time.Since(watchFrom) < 20*time.Second {
		denied()
		time.Sleep(200 * time.Millisecond)
	}
	cpu := r.cpu(t) - cpuBefore
	// A slow machine may need longer than the window to show every sign.
	var refused, aborts float64
	waitFor(t, 90*time.Second, "/readyz naming the refusal, a refused write and an authorization abort", func() (bool, string) {
		denied()
		refused = r.metric(t, metrics.NameAuthzRefused, `topic="`+victim+`"`)
		aborts = r.metric(t, metrics.NameAborts, `reason="authorization"`)
		return reason != "" && refused >= 1 && aborts >= 1, fmt.Sprintf("/readyz %q, refused %v, aborts %v", reason, refused, aborts)
	})
	_, committed := s.committed()
	victimDuring := len(s.readTopics([]string{victim}, true, time.Minute))
	t.Logf("20 s denied: /readyz %q; refused %v, aborts %v; CPU %s; committed %d of %d; %s holds %d committed records (%d before)",
		reason, refused, aborts, cpu, committed, len(s.events), victim, victimDuring, victimBefore)
	if !strings.Contains(reason, victim) || !strings.Contains(reason, "TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("/readyz never named the topic and the authorization failure: %q", reason)
	}
	if refused < 1 || aborts < 1 {
		t.Errorf("%s = %v, %s{reason=authorization} = %v: not counted", metrics.NameAuthzRefused, refused, metrics.NameAborts, aborts)
	}
	if committed >= int64(len(s.events)) {
		t.Errorf("the whole input was committed while writes to %s were refused", victim)
	}
	if victimDuring != victimBefore {
		t.Errorf("%s gained %d committed records while writes were refused", victim, victimDuring-victimBefore)
	}
	if cpu > 8*time.Second {
		t.Errorf("router used %s of CPU in 20 s with writes refused: it spins", cpu)
	}

	del := kadm.NewACLs().Deny("User:" + saslUser).DenyHosts().Topics(victim).
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite)
	if res, err := s.adm.DeleteACLs(ctx, del); err != nil || len(res) == 0 || res[0].Err != nil {
		t.Fatalf("delete the ACL: %v %v", err, res)
	}
	allowed := time.Now()
	s.waitCaughtUp(p2, 3*time.Minute, r)
	t.Logf("caught up %s after the ACL was deleted", time.Since(allowed).Round(100*time.Millisecond))
	r.stop(40 * time.Second)
	tl := s.tally(s.readBack(true, 2*time.Minute))
	s.requireExactlyOnce(tl)
	s.report(tl, fmt.Sprintf("denied_topic=%s authorization_refused=%v cpu_while_denied=%s", victim, refused, cpu.Round(10*time.Millisecond)))
}
