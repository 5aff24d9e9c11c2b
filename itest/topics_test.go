package itest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/readback"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestComputedTopics runs a topology with two topic_from routes on the
// real broker, exactly-once: one creating missing topics, one requiring
// them. Allowed names land on their topics (created under create); a
// name outside the allow-list, an invalid name and a missing topic under
// require each land on dirty with its reason, all read read_committed.
func TestComputedTopics(t *testing.T) {
	s := newScenario(t, "topics", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := s.app + "."
	have := p + "req.have"
	if resp, err := s.adm.CreateTopic(ctx, 1, 1, nil, have); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", have, err, resp.Err)
	}
	made := []string{p + "out.web", p + "out.api"}
	dirty := p + "dirty"
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = s.adm.DeleteTopics(c, append(made, have, dirty)...)
	})
	topo := `application_id: ` + s.app + `
guarantee: exactly_once
inputs:
  - topic: ` + s.input + `
routing:
  default: drop
routes:
  - name: created
    when: kind == "c"
    topic_from:
      expr: '"` + p + `out." + lower(service)'
      allow: ["` + p + `out.*"]
      missing: create
  - name: required
    when: kind == "r"
    topic_from:
      expr: '"` + p + `req." + service'
      allow_regex: '` + strings.ReplaceAll(p, ".", `\.`) + `req\.[a-z]+'
      missing: require
dirty:
  topic: ` + dirty + `
`
	s.config = filepath.Join(s.dir, "topics.yaml")
	if err := os.WriteFile(s.config, []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	in := map[string]string{ // value -> topic, or "dirty:" + reason
		`{"kind":"c","service":"Web","n":1}`:  made[0],
		`{"kind":"c","service":"API","n":2}`:  made[1],
		`{"kind":"c","service":"web","n":3}`:  made[0],
		`{"kind":"c","service":"a/b","n":4}`:  "dirty:" + wire.ReasonTopicInvalid,
		`{"kind":"r","service":"have","n":5}`: have,
		`{"kind":"r","service":"none","n":6}`: "dirty:" + wire.ReasonTopicMissing,
		`{"kind":"r","service":"X1","n":7}`:   "dirty:" + wire.ReasonTopicNotAllowed,
	}
	var recs []*kgo.Record
	for v := range in {
		recs = append(recs, &kgo.Record{Topic: s.input, Value: []byte(v)})
	}
	if err := s.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := s.startRouter("a")
	r.waitReady(2 * time.Minute)
	topics := append(append([]string{}, made...), have, dirty)
	got := map[string]string{}
	waitFor(t, 2*time.Minute, "every record read back read_committed", func() (bool, string) {
		// The created topics may not exist yet: read what exists.
		got = map[string]string{}
		for _, tp := range topics {
			rs, err := readback.ReadCommitted(ctx, s.brokers, tp)
			if err != nil {
				continue
			}
			for _, rec := range rs {
				where := rec.Topic
				if rec.Topic == dirty {
					where = "dirty:" + wire.Decode(rec.Headers).Code()
				}
				got[string(rec.Value)] = where
			}
		}
		return len(got) >= len(in), ""
	})
	r.stop(time.Minute)
	for v, want := range in {
		if got[v] != want {
			t.Errorf("%s: landed on %q, want %q", v, got[v], want)
		}
	}
	if len(got) != len(in) {
		t.Errorf("read back %d records, want %d", len(got), len(in))
	}
}
