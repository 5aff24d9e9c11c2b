package runtime

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/readback"
)

// TestWriteRefusedByACL: on a kfake cluster with ACLs, a DENY WRITE on one
// output topic for the router's user makes every transaction writing
// there abort (at-least-once: every interval end without a commit):
// counted as authorization (per topic), not ready with the topic named,
// the input not committed past it; deleting the ACL lets the router go on
// by itself, in the same group session, and the outputs are then exactly
// once (at-least-once: every event at least once).
func TestWriteRefusedByACL(t *testing.T) {
	eachGuarantee(t, testWriteRefusedByACL)
}

func testWriteRefusedByACL(t *testing.T, guarantee config.Guarantee) {
	all := func(rt kmsg.ACLResourceType, name string) kfake.ACL {
		return kfake.ACL{Resource: rt, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAll, Allow: true}
	}
	c := newCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "admin"), kfake.EnableACLs(),
		kfake.User("PLAIN", "router", "router-pw", all(kmsg.ACLResourceTypeTopic, "*"), all(kmsg.ACLResourceTypeGroup, "*"),
			all(kmsg.ACLResourceTypeTransactionalId, "*"), all(kmsg.ACLResourceTypeCluster, "kafka-cluster")))
	brokers := c.ListenAddrs()
	admin := []kgo.Opt{kgo.SASL(plain.Auth{User: "admin", Pass: "admin"}.AsMechanism())}
	var joins atomic.Int32 // a JoinGroup without a member ID: a new session
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if req.(*kmsg.JoinGroupRequest).MemberID == "" {
			joins.Add(1)
		}
		return nil, nil, false
	})
	top := exampleTopology(t, brokers, guarantee)
	top.Settings.Security = config.Security{Protocol: config.ProtocolSASLPlaintext,
		SASL: config.SASL{Mechanism: "PLAIN", Username: "router", Password: "router-pw"}}
	victim := top.Route("warn").Topic

	cl, err := kgo.NewClient(append(admin, kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	g := gen.New(41)
	events := map[string]gen.Event{}
	produce := func(n int) {
		for range n {
			ev := g.Next()
			events[ev.ID] = ev
			cl.Produce(context.Background(), &kgo.Record{Key: ev.Key, Value: ev.Value}, nil)
		}
		if err := cl.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	produce(2000)
	r := start(t, top, "a")
	waitConsumed(t, r.p.Metrics(), 2000, time.Minute)

	adm := kadm.NewClient(cl)
	ctx := context.Background()
	acl := func() *kadm.ACLBuilder {
		return kadm.NewACLs().Deny("User:router").DenyHosts().Topics(victim).
			ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite)
	}
	if res, err := adm.CreateACLs(ctx, acl()); err != nil || res[0].Err != nil {
		t.Fatalf("create ACL: %v %v", err, res)
	}
	produce(2000)
	m := r.p.Metrics()
	for deadline := time.Now().Add(time.Minute); testutil.ToFloat64(m.AuthzRefused.WithLabelValues(victim)) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no refused write counted: %+v", m.Snapshot())
		}
	}
	if ok, why := r.p.Ready(); ok || !strings.Contains(why, victim) || !strings.Contains(why, "TOPIC_AUTHORIZATION_FAILED") {
		t.Fatalf("ready %v %q while writes are refused", ok, why)
	}
	if n := testutil.ToFloat64(m.Aborts.WithLabelValues("authorization")); n < 2 {
		t.Fatalf("aborts{authorization} = %v", n)
	}
	if s := m.Snapshot(); s.Consumed >= 4000 {
		t.Fatalf("the whole input was committed while writes to %s were refused: %+v", victim, s)
	}
	if res, err := adm.DeleteACLs(ctx, acl()); err != nil || len(res) == 0 || res[0].Err != nil {
		t.Fatalf("delete ACL: %v %v", err, res)
	}
	waitConsumed(t, m, 4000, time.Minute)
	r.stop(t)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	recs, err := readback.ReadCommittedWith(rctx, brokers, admin, top.OutputTopics()...)
	if err != nil {
		t.Fatal(err)
	}
	if n := joins.Load(); n != 1 {
		t.Fatalf("%d group sessions, want 1: a refused write backs off inside the session", n)
	}
	if guarantee == config.AtLeastOnce {
		verifyAtLeastOnce(t, top, events, recs)
		return
	}
	verify(t, top, events, recs)
}

// verifyAtLeastOnce checks every generated event appears at least once,
// on the topic the oracle (gen.RouteOf) names, and nothing else appears.
func verifyAtLeastOnce(t *testing.T, top *plan.Plan, events map[string]gen.Event, recs []*kgo.Record) {
	t.Helper()
	topicOf := map[string]string{"dirty": top.Dirty.Topic}
	for _, r := range top.Routes {
		topicOf[r.Name] = r.Topic
	}
	seen := map[string]bool{}
	for _, r := range recs {
		id := gen.IDOf(r.Key, r.Value)
		ev, ok := events[id]
		if !ok {
			t.Fatalf("record on %s with unknown id %q", r.Topic, id)
		}
		if want := topicOf[gen.RouteOf[ev.Kind]]; r.Topic != want {
			t.Fatalf("id %s (kind %s) on %s, want %s", id, ev.Kind, r.Topic, want)
		}
		seen[id] = true
	}
	if len(seen) != len(events) {
		t.Fatalf("%d of %d events on the outputs: records lost", len(seen), len(events))
	}
}
