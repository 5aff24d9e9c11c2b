package stageone

import (
	"context"
	"errors"
	"strconv"
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

// TestComputedTopicAskedOnce: a topic the resolver found is not asked
// about again (its own cache would answer the same), a missing one is
// asked on each record (the runtime's resolver asks the brokers again
// after missingRecheck), and a routed record of a known topic allocates
// nothing for it: the name is built in a buffer and looked up.
func TestComputedTopicAskedOnce(t *testing.T) {
	top := topo(t, computedRoutes, matchAll)
	f := &fakeTopics{exists: map[string]bool{"logs.web": true}}
	eng := New(top, WithTopics(f))
	web, api := input(`{"service":"Web"}`), input(`{"service":"api"}`)
	tally := metrics.NewTally()
	for range 3 {
		eng.Process(web, tally)
		eng.Process(api, tally)
	}
	if got := strings.Join(f.asked, ","); got != "logs.web,logs.api,logs.api,logs.api" {
		t.Errorf("asked %s; want logs.web once, logs.api each time", got)
	}
	if tally.ComputedTopics[[2]string{"per-service", "logs.web"}] != 3 || tally.Dirty[[2]string{wire.StageRoute, wire.ReasonTopicMissing}] != 3 {
		t.Errorf("computed %v, dirty %v: want 3 to logs.web and 3 missing", tally.ComputedTopics, tally.Dirty)
	}
	// Under the race detector sync.Pool drops evaluation states at
	// random, so allocations are counted in a plain build only.
	if n := testing.AllocsPerRun(1000, func() { eng.Process(web, tally) }); n != 0 && !raceBuild {
		t.Errorf("a record of a known computed topic: %v allocations, want 0", n)
	}
}

// TestComputedTopicPastKnown: past maxKnownTopics names a route keeps
// none, and each new name is checked and resolved on every record, so
// its records still land where they must.
func TestComputedTopicPastKnown(t *testing.T) {
	top := topo(t, computedRoutes, matchAll)
	f := &fakeTopics{exists: map[string]bool{}}
	for i := range maxKnownTopics + 2 {
		f.exists["logs.s"+strconv.Itoa(i)] = true
	}
	eng := New(top, WithTopics(f))
	for range 2 {
		for i := range maxKnownTopics + 2 {
			tally := metrics.NewTally()
			outs := eng.Process(input(`{"service":"s`+strconv.Itoa(i)+`"}`), tally)
			if got := topicsOf(outs); len(got) != 2 || got[0] != "logs.s"+strconv.Itoa(i) {
				t.Fatalf("service s%d: topics %v", i, got)
			}
		}
	}
	if want := maxKnownTopics + 2*2; len(f.asked) != want {
		t.Errorf("asked %d times, want %d: the known names once, the two past the bound on each record", len(f.asked), want)
	}
	if bad := input(`{"service":"a b"}`); wire.Decode(eng.Process(bad, metrics.NewTally())[0].Headers).Code() != wire.ReasonTopicInvalid {
		t.Errorf("an invalid name past the bound is not topic_invalid")
	}
}
