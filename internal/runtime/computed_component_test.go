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

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
	"github.com/sidestream/sidestream/internal/wire"
)

const computedTopology = `application_id: computed
guarantee: %s
inputs:
  - topic: logs
routing:
  default: drop
routes:
  - name: created
    when: kind == "c"
    topic_from:
      expr: '"out." + lower(service)'
      allow: ["out.*"]
      missing: create
    topic_configs:
      retention.ms: "3600000"
  - name: required
    when: kind == "r"
    topic_from:
      expr: '"req." + service'
      allow_regex: 'req\.[a-z]+'
      missing: require
dirty:
  topic: logs.dirty
`

// TestComputedTopics runs topic_from routes on kfake under both
// guarantees: allowed names land on their topic (created under create,
// with the route's topic configs), and an invalid name, a name outside
// the allow-list and a missing topic under require each land on dirty
// with their own reason.
func TestComputedTopics(t *testing.T) {
	eachGuarantee(t, func(t *testing.T, g config.Guarantee) {
		c := newCluster(t, kfake.SeedTopics(1, "req.have"))
		brokers := c.ListenAddrs()
		top := stageonetest.CompileAt(t, "computed.yaml", strings.Replace(computedTopology, "%s", string(g), 1), brokers, "")
		in := map[string]string{ // value -> where it must land ("topic" or "dirty:reason")
			`{"kind":"c","service":"Web","n":1}`:                        "out.web",
			`{"kind":"c","service":"API","n":2}`:                        "out.api",
			`{"kind":"c","service":"Web","n":3}`:                        "out.web",
			`{"kind":"c","service":"a b","n":4}`:                        "dirty:" + wire.ReasonTopicInvalid,
			`{"kind":"c","service":"` + strings.Repeat("x", 250) + `"}`: "dirty:" + wire.ReasonTopicInvalid,
			`{"kind":"c","service":7,"n":5}`:                            "dirty:" + wire.ReasonTopicInvalid,
			`{"kind":"r","service":"have","n":6}`:                       "req.have",
			`{"kind":"r","service":"none","n":7}`:                       "dirty:" + wire.ReasonTopicMissing,
			`{"kind":"r","service":"X1","n":8}`:                         "dirty:" + wire.ReasonTopicNotAllowed,
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"))
		if err != nil {
			t.Fatal(err)
		}
		for v := range in {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		cl.Close()
		r := start(t, top, "a")
		waitConsumed(t, r.p.Metrics(), len(in), time.Minute)
		r.stop(t)
		recs := readCommitted(t, brokers, "out.web", "out.api", "req.have", "logs.dirty")
		got := map[string]string{}
		for _, rec := range recs {
			where := rec.Topic
			if rec.Topic == "logs.dirty" {
				where = "dirty:" + wire.Decode(rec.Headers).Code()
			}
			if _, dup := got[string(rec.Value)]; dup {
				t.Errorf("%s read back twice", rec.Value)
			}
			got[string(rec.Value)] = where
		}
		for v, want := range in {
			if got[v] != want {
				t.Errorf("%.60s: landed on %q, want %q", v, got[v], want)
			}
		}
		if len(got) != len(in) {
			t.Errorf("read back %d records, want %d", len(got), len(in))
		}
		m := r.p.Metrics()
		if s := m.Snapshot(); s.Aborts != 0 {
			// Creating a topic must not hold the transaction open: a
			// lookup answered from a stale metadata cache once did.
			t.Errorf("%v transactions aborted, want none", s.Aborts)
		}
		if n := testutil.ToFloat64(m.ComputedTopicRecords.WithLabelValues("created", "out.web")); n != 2 {
			t.Errorf("computed topic series created/out.web = %v, want 2", n)
		}
		if n := testutil.ToFloat64(m.ComputedTopicsCreate.WithLabelValues("created")); n != 2 {
			t.Errorf("topics created = %v, want 2", n)
		}
		acl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
		if err != nil {
			t.Fatal(err)
		}
		defer acl.Close()
		adm := kadm.NewClient(acl)
		rcs, err := adm.DescribeTopicConfigs(context.Background(), "out.web")
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On("out.web", nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, cf := range rc.Configs {
			found = found || cf.Key == "retention.ms" && cf.MaybeValue() == "3600000"
		}
		if !found {
			t.Errorf("out.web was not created with the route's retention.ms=3600000: %+v", rc.Configs)
		}
	})
}
