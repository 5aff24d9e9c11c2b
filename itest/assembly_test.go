package itest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
)

// assemblyRun is one application of examples/assemble-orders.yaml over
// the shared input, with its own application id and topics.
type assemblyRun struct {
	*windowRun // for waitWindowDone: input lag 0, repartition lag 0, settled
	assembled  string
	incomplete string
	duplicate  string
}

func newAssemblyRun(base *scenario, tag string, extra ...[2]string) *assemblyRun {
	t := base.t
	prefix := base.app + "-" + tag
	s, top := base.derivedRun(tag, "../examples/assemble-orders.yaml", append([][2]string{
		{"application_id: assemble-orders\n", "application_id: " + prefix + "\n"},
		{"  - topic: order-parts\n", "  - topic: " + base.input + "\n"},
		{"topic: orders.", "topic: " + prefix + ".orders."}, // route, incomplete, duplicate and dirty topics
	}, extra...))
	rt := top.Route("assembled")
	if rt == nil || rt.Assembly == nil || rt.Assembly.Spec.Time != config.ClockEvent {
		t.Fatalf("examples/assemble-orders.yaml changed: no event-time assembly route %q", "assembled")
	}
	a := &assemblyRun{
		windowRun: &windowRun{scenario: s, tag: tag, dirty: top.Dirty.Topic,
			repartition: rt.Assembly.RepartitionTopic, changelog: rt.Assembly.ChangelogTopic},
		assembled: rt.Topic, incomplete: rt.Assembly.Spec.IncompleteTopic, duplicate: rt.Assembly.Spec.DuplicateTopic,
	}
	s.topicOf = map[string]string{"dirty": top.Dirty.Topic}
	return a
}

// assemblyOutcome is what one run wrote, read back read_committed: every
// record as "key|value" (values are deterministic under event time).
type assemblyOutcome struct {
	assembled, incomplete, duplicate []string
	dirty                            int
	missing                          map[string]string // incomplete id -> missing header
}

func (a *assemblyRun) collect() assemblyOutcome {
	o := assemblyOutcome{missing: map[string]string{}}
	for _, r := range a.readTopics(a.outputs, true, 2*time.Minute) {
		kv := string(r.Key) + "|" + string(r.Value)
		switch r.Topic {
		case a.assembled:
			o.assembled = append(o.assembled, kv)
		case a.incomplete:
			o.incomplete = append(o.incomplete, kv)
			for _, h := range r.Headers {
				if h.Key == "sidestream.assembly.missing" {
					o.missing[string(r.Key)] = string(h.Value)
				}
			}
		case a.duplicate:
			o.duplicate = append(o.duplicate, kv)
		case a.dirty:
			o.dirty++
		}
	}
	for _, l := range [][]string{o.assembled, o.incomplete, o.duplicate} {
		slices.Sort(l)
	}
	return o
}

// TestAssemblyRestartEquivalence: examples/assemble-orders.yaml (seed
// 002: X and Y parts of an order split into two routes, projected, then
// assembled by order_id; TTL 30s in event time, retention 10m) over
// gen.OrderParts: 8% of orders miss a part, 5% repeat a part after
// completing, 1% carry an id that is an object. Run A is one
// uninterrupted process; run B is killed with SIGKILL 5 times and
// restarted, so open assemblies, completed-ID markers and TTL timers are
// restored from the changelog mid-stream. Both must match the
// generator's expectations exactly, and their read_committed assembled,
// incomplete and duplicate outputs must be identical, byte for byte.
//
// The TTL runs on event time so that the outputs depend only on the
// input: under processing time, whether an assembly expires depends on
// how long a killed run takes to restart, and A and B would differ. The
// input is keyed by order id, so each ID's repartition partition is its
// input partition and stage two's input order is a function of the input.
func TestAssemblyRestartEquivalence(t *testing.T) {
	base := newScenario(t, "assembly_restart_equivalence", 0)
	orders := 20_000
	if v := os.Getenv("SIDESTREAM_IT_ASSEMBLY_ORDERS"); v != "" {
		orders, _ = strconv.Atoi(v)
	}
	parts, exp := gen.OrderParts(base.rng.Uint64(), orders, inputPartitions)
	for i, p := range parts {
		ev := gen.Event{ID: fmt.Sprintf("part-%d", i), Key: p.Key, Value: p.Value, TS: p.TS}
		base.events = append(base.events, ev)
	}
	for i := range base.events {
		base.byID[base.events[i].ID] = &base.events[i]
	}
	a, b := newAssemblyRun(base, "a"), newAssemblyRun(base, "b")
	p := base.startProducer(1500)
	ra := a.startRouter("a", fastGroup...)
	rb := b.startRouter("b", fastGroup...)
	rb = b.killRestartLoop(p, rb, 5)
	a.waitWindowDone(p, 3*time.Minute, ra)
	b.waitWindowDone(p, 3*time.Minute, rb)
	ra.stop(40 * time.Second)
	rb.stop(40 * time.Second)

	outs := map[string]assemblyOutcome{}
	for _, run := range []*assemblyRun{a, b} {
		o := run.collect()
		outs[run.tag] = o
		ids := map[string]bool{}
		for _, kv := range o.assembled {
			id, v, _ := strings.Cut(kv, "|")
			var x struct {
				Complete bool                       `json:"complete"`
				Parts    map[string]json.RawMessage `json:"parts"`
			}
			if err := json.Unmarshal([]byte(v), &x); err != nil || !x.Complete || len(x.Parts) != 2 {
				t.Errorf("run %s: assembled %s: %v", run.tag, kv, err)
			}
			if ids[id] {
				t.Errorf("run %s: %s assembled twice", run.tag, id)
			}
			ids[id] = true
		}
		if !maps.EqualFunc(ids, exp.Complete, func(bool, []string) bool { return true }) {
			t.Errorf("run %s: assembled %d ids, the generator expects %d", run.tag, len(ids), len(exp.Complete))
		}
		wantMissing := map[string]string{}
		for id, m := range exp.Incomplete {
			wantMissing[id] = strings.Join(m, ",")
		}
		if !maps.Equal(o.missing, wantMissing) || len(o.incomplete) != len(exp.Incomplete) {
			t.Errorf("run %s: %d incomplete (%d distinct), the generator expects %d", run.tag, len(o.incomplete), len(o.missing), len(exp.Incomplete))
		}
		if len(o.duplicate) != exp.DuplicateRoute || o.dirty != exp.Dirty {
			t.Errorf("run %s: %d duplicate, %d dirty; want %d and %d", run.tag, len(o.duplicate), o.dirty, exp.DuplicateRoute, exp.Dirty)
		}
		t.Logf("run %s: assembled=%d incomplete=%d duplicate=%d dirty=%d", run.tag, len(o.assembled), len(o.incomplete), len(o.duplicate), o.dirty)
	}
	oa, ob := outs["a"], outs["b"]
	same := slices.Equal(oa.assembled, ob.assembled) && slices.Equal(oa.incomplete, ob.incomplete) && slices.Equal(oa.duplicate, ob.duplicate)
	if !same {
		t.Errorf("A and B differ: assembled %v, incomplete %v, duplicate %v",
			slices.Equal(oa.assembled, ob.assembled), slices.Equal(oa.incomplete, ob.incomplete), slices.Equal(oa.duplicate, ob.duplicate))
	}
	restored := 0
	for _, r := range b.routers {
		for _, l := range r.logLines(0, "assembly state restored") {
			if !strings.Contains(l, "records=0") {
				restored++
			}
		}
	}
	line := fmt.Sprintf("scenario=assembly_restart_equivalence records=%d orders=%d kills=%d restarts=%d assembled=%d incomplete=%d duplicate=%d dirty=%d restores_with_state=%d identical=%v elapsed=%s",
		len(base.events), orders, b.kills, b.restarts, len(oa.assembled), len(oa.incomplete), len(oa.duplicate), oa.dirty,
		restored, same, time.Since(base.started).Round(100*time.Millisecond))
	t.Log(line)
	fmt.Println(line)
}
