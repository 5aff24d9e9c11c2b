package stageone

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
	"github.com/sidestream/sidestream/internal/wire"
)

// fakeTopics is a TopicResolver over a fixed set: a topic in exists
// resolves, one in refused is refused, the rest are missing (or the
// batch's error when down is set).
type fakeTopics struct {
	exists, refused map[string]bool
	down            error
	asked           []string
}

func (f *fakeTopics) Resolve(_ context.Context, _ *plan.RouteNode, topic string) error {
	f.asked = append(f.asked, topic)
	switch {
	case f.down != nil:
		return f.down
	case f.exists[topic]:
		return nil
	case f.refused[topic]:
		return &TopicRefusedError{Err: errors.New("POLICY_VIOLATION")}
	}
	return ErrTopicMissing
}

const computedRoutes = `routes:
  - name: per-service
    key: service
    topic_from:
      expr: '"logs." + lower(service)'
      allow: ["logs.*"]
  - name: fixed
    topic: logs.fixed
`

const matchAll = "routing: {match: all, default: drop}\n"

func TestComputedTopicOutcomes(t *testing.T) {
	top := topo(t, computedRoutes, matchAll)
	f := &fakeTopics{exists: map[string]bool{"logs.web": true}, refused: map[string]bool{"logs.nope": true}}
	eng := New(top, WithTopics(f))
	for _, tc := range []struct {
		value  string
		topics []string // routed: the topics written, in order
		reason string   // dirty: its reason
	}{
		{`{"service":"Web"}`, []string{"logs.web", "logs.fixed"}, ""},
		{`{"service":"api"}`, nil, wire.ReasonTopicMissing},
		{`{"service":"nope"}`, nil, wire.ReasonTopicCreateRefused},
		{`{"service":"a b"}`, nil, wire.ReasonTopicInvalid},
		{`{"service":"` + strings.Repeat("x", 250) + `"}`, nil, wire.ReasonTopicInvalid},
		{`{"service":7}`, nil, wire.ReasonTopicInvalid},
		{`{"service":"fixed"}`, nil, wire.ReasonTopicNotAllowed}, // the topology's own topic
		{`{"other":1}`, nil, wire.ReasonTopicInvalid},
	} {
		tally := metrics.NewTally()
		r := input(tc.value)
		outs := eng.Process(r, tally)
		checkConserved(t, top, r, outs, tally)
		if tc.reason != "" {
			if len(outs) != 1 || outs[0].Topic != "dirty" || wire.Decode(outs[0].Headers).Code() != tc.reason {
				t.Errorf("%.40s: outputs %v, want dirty with %s", tc.value, topicsOf(outs), tc.reason)
			}
			continue
		}
		if got := topicsOf(outs); strings.Join(got, ",") != strings.Join(tc.topics, ",") {
			t.Errorf("%s: topics %v, want %v", tc.value, got, tc.topics)
		}
		if tally.ComputedTopics[[2]string{"per-service", "logs.web"}] != 1 {
			t.Errorf("%s: computed topic not counted: %v", tc.value, tally.ComputedTopics)
		}
	}
}

// TestComputedTopicBrokerDown: a resolver that cannot answer is not the
// record's fault: a BatchError, nothing counted.
func TestComputedTopicBrokerDown(t *testing.T) {
	top := topo(t, computedRoutes, matchAll)
	eng := New(top, WithTopics(&fakeTopics{down: context.DeadlineExceeded}))
	tally := metrics.NewTally()
	src := int64(5)
	outs, err := eng.ProcessFrom(context.Background(), input(`{"service":"web"}`), &src, tally)
	var be *BatchError
	if !errors.As(err, &be) || outs != nil {
		t.Fatalf("ProcessFrom = %v, %v; want a BatchError", outs, err)
	}
	if !tally.Empty() || src != 5 {
		t.Fatalf("counted %+v, source progress %d: want nothing", tally, src)
	}
}

func topicsOf(outs []*kgo.Record) []string { return stageonetest.Topics(outs) }
