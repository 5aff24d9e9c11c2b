package runtime

import (
	"context"
	"strings"
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
)

// checkReadyAgrees: what /readyz answers (Processor.Ready) and the
// sidestream_ready gauge say the same. The two are read one after the
// other, so a reading that straddles a change (Ready differs before and
// after the gauge is read) is no verdict.
func checkReadyAgrees(t *testing.T, p *Processor, when string) bool {
	t.Helper()
	ok, why := p.Ready()
	g := testutil.ToFloat64(p.Metrics().Ready)
	if again, _ := p.Ready(); again != ok {
		return false
	}
	if (g == 1) != ok {
		t.Errorf("%s: /readyz says ready=%v (%q) but sidestream_ready is %v", when, ok, why, g)
		return false
	}
	return ok
}

// TestReadyAgreesAfterProduceAbort: a transaction aborted because the
// broker refuses a produce (an ACL) makes the router not ready on /readyz
// and on the sidestream_ready gauge alike, and once the refusal ends both
// say ready again.
func TestReadyAgreesAfterProduceAbort(t *testing.T) {
	all := func(rt kmsg.ACLResourceType, name string) kfake.ACL {
		return kfake.ACL{Resource: rt, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAll, Allow: true}
	}
	c := newCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "admin"), kfake.EnableACLs(),
		kfake.User("PLAIN", "router", "router-pw", all(kmsg.ACLResourceTypeTopic, "*"), all(kmsg.ACLResourceTypeGroup, "*"),
			all(kmsg.ACLResourceTypeTransactionalId, "*"), all(kmsg.ACLResourceTypeCluster, "kafka-cluster")))
	brokers := c.ListenAddrs()
	top := exampleTopology(t, brokers, config.ExactlyOnce)
	top.Settings.Security = config.Security{Protocol: config.ProtocolSASLPlaintext,
		SASL: config.SASL{Mechanism: "PLAIN", Username: "router", Password: "router-pw"}}
	victim := top.Route("warn").Topic
	cl, err := kgo.NewClient(kgo.SASL(plain.Auth{User: "admin", Pass: "admin"}.AsMechanism()), kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	g := gen.New(43)
	produce := func(n int) {
		for range n {
			ev := g.Next()
			cl.Produce(context.Background(), &kgo.Record{Key: ev.Key, Value: ev.Value}, nil)
		}
		if err := cl.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	produce(1000)
	r := start(t, top, "a")
	m := r.p.Metrics()
	waitConsumed(t, m, 1000, time.Minute)
	for deadline := time.Now().Add(time.Minute); !checkReadyAgrees(t, r.p, "after the first commits"); time.Sleep(20 * time.Millisecond) {
		if t.Failed() || time.Now().After(deadline) {
			t.Fatalf("not ready after the first commits: %v", r.p.Metrics().Snapshot())
		}
	}

	adm := kadm.NewClient(cl)
	ctx := context.Background()
	acl := func() *kadm.ACLBuilder {
		return kadm.NewACLs().Deny("User:router").DenyHosts().Topics(victim).
			ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite)
	}
	if res, err := adm.CreateACLs(ctx, acl()); err != nil || res[0].Err != nil {
		t.Fatalf("create ACL: %v %v", err, res)
	}
	produce(1000)
	for deadline := time.Now().Add(time.Minute); testutil.ToFloat64(m.Aborts.WithLabelValues("authorization")) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no transaction aborted by the refusal: %+v", m.Snapshot())
		}
	}
	if ok, why := r.p.Ready(); ok || !strings.Contains(why, victim) {
		t.Fatalf("ready %v %q while writes to %s are refused", ok, why, victim)
	}
	checkReadyAgrees(t, r.p, "after a produce abort")

	if res, err := adm.DeleteACLs(ctx, acl()); err != nil || len(res) == 0 || res[0].Err != nil {
		t.Fatalf("delete ACL: %v %v", err, res)
	}
	waitConsumed(t, m, 2000, time.Minute)
	for deadline := time.Now().Add(time.Minute); !checkReadyAgrees(t, r.p, "after the refusal ended"); time.Sleep(20 * time.Millisecond) {
		if t.Failed() || time.Now().After(deadline) {
			t.Fatalf("not ready after the refusal ended")
		}
	}
}
