package itest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/gen"
)

// limitsYAML is one tumbling window per id, at most 150 open windows per
// task, the rest to an overflow route; no repartition topic, so a task
// sees exactly its input partition's order.
const limitsYAML = `application_id: APP
guarantee: exactly_once
inputs:
  - topic: INPUT
event_time:
  field: ts
  format: epoch_ms
routing:
  default: drop
routes:
  - name: perid
    topic: APP.perid
    when: "true"
    window:
      type: tumbling
      size: 1m
      grace: 0s
      max_out_of_orderness: 0s
      watermark: max
      emit: final
      group_by: id
      repartition: false
      late_topic: APP.late
      aggregates: [{name: n, fn: count}]
      limits: {max_entries: 150, overflow_topic: APP.overflow}
dirty:
  topic: APP.dirty
`

// TestLimitsRestartEquivalence: with state limits, which records overflow
// depends on what each task holds when they arrive. With the window in
// the input partition's task (repartition: false) that is a function of
// the partition's order alone, and the open-window count is restored from
// the changelog: so a run killed with SIGKILL five times and restarted
// writes, read_committed, exactly the overflow records and the final
// windows of an uninterrupted run, and in both every record is counted
// once (window counts + overflow + late + dirty = input, the flush records
// aside: their windows stay open).
func TestLimitsRestartEquivalence(t *testing.T) {
	const n, ids = 30_000, 6_000
	base := newScenario(t, "limits", 0)
	// ids repeat every 6,000 records, 50 ms apart: a minute holds 1,200
	// records of distinct ids, about 200 per task, over max_entries.
	t0 := int64(1_790_000_000_000)
	base.events = nil
	for i := range n {
		id := fmt.Sprintf("k-%05d", i%ids)
		base.events = append(base.events, gen.Event{ID: fmt.Sprintf("e-%d", i), Key: []byte(id), TS: t0 + int64(i)*50,
			Value: fmt.Appendf(nil, `{"id":%q,"ts":%d,"seq":%d}`, id, t0+int64(i)*50, i)})
	}
	// One far-future record per partition closes every window.
	flushTS := t0 + int64(n)*50 + 3_600_000
	for _, k := range keysForEveryPartition("flush", inputPartitions) {
		base.events = append(base.events, gen.Event{ID: string(k), Key: k, TS: flushTS,
			Value: fmt.Appendf(nil, `{"id":%q,"ts":%d}`, k, flushTS)})
	}
	base.byID = map[string]*gen.Event{}
	for i := range base.events {
		base.byID[base.events[i].ID] = &base.events[i]
	}
	src := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(src, []byte(limitsYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		finals   map[string]string // key -> value
		overflow map[string]int    // value -> copies
		counted  int               // window counts + overflow + late + dirty
	}
	run := func(tag string) (*scenario, func() outcome) {
		prefix := base.app + "-" + tag
		s, top := base.derivedRun(tag, src, [][2]string{{"APP", prefix}, {"INPUT", base.input}})
		rt := top.Route("perid")
		return s, func() outcome {
			o := outcome{finals: map[string]string{}, overflow: map[string]int{}}
			for _, r := range s.readTopics(s.outputs, true, 2*time.Minute) {
				switch r.Topic {
				case rt.Topic:
					var v struct {
						N       int  `json:"n"`
						Final   bool `json:"final"`
						Evicted bool `json:"evicted"`
					}
					var w struct {
						Aggregates json.RawMessage `json:"aggregates"`
					}
					if json.Unmarshal(r.Value, &w) != nil || json.Unmarshal(w.Aggregates, &v) != nil || json.Unmarshal(r.Value, &v) != nil {
						t.Fatalf("run %s: window result %q", tag, r.Value)
					}
					if !v.Final || v.Evicted {
						t.Fatalf("run %s: result %s is not a plain final", tag, r.Value)
					}
					if _, dup := o.finals[string(r.Key)]; dup {
						t.Fatalf("run %s: two finals for %s", tag, r.Key)
					}
					o.finals[string(r.Key)] = string(r.Value)
					o.counted += v.N
				case strings.TrimSuffix(rt.Topic, ".perid") + ".overflow":
					o.overflow[string(r.Value)]++
					o.counted++
				default:
					o.counted++
				}
			}
			return o
		}
	}
	a, collectA := run("a")
	b, collectB := run("b")
	p := base.startProducer(2000) // 15 s: the kills land while records flow
	ra := a.startRouter("a", fastGroup...)
	rb := b.startRouter("b", fastGroup...)
	rb = b.killRestartLoop(p, rb, 5)
	a.waitCaughtUp(p, 3*time.Minute, ra)
	b.waitCaughtUp(p, 3*time.Minute, rb)
	// The last restart may be moments old: let it start before the stop.
	rb.waitReady(time.Minute)
	ra.stop(40 * time.Second)
	rb.stop(40 * time.Second)

	oa, ob := collectA(), collectB()
	overflowed := 0
	for _, c := range oa.overflow {
		overflowed += c
	}
	t.Logf("scenario=limits_restart_equivalence records=%d kills=%d finals=%d overflow=%d counted_a=%d counted_b=%d",
		len(base.events), b.kills, len(oa.finals), overflowed, oa.counted, ob.counted)
	if overflowed == 0 || len(oa.finals) == 0 {
		t.Fatalf("the limit never bound (%d overflow records, %d finals): the test proved nothing", overflowed, len(oa.finals))
	}
	// The flush records' own windows stay open: they are all that is not
	// in an output.
	if oa.counted != n || ob.counted != n {
		t.Fatalf("records counted once: run a %d, run b %d, want %d", oa.counted, ob.counted, n)
	}
	if !maps.Equal(oa.overflow, ob.overflow) {
		t.Fatalf("the killed run overflowed other records than the uninterrupted one (%d against %d distinct)", len(ob.overflow), len(oa.overflow))
	}
	if !maps.Equal(oa.finals, ob.finals) {
		t.Fatalf("the killed run's finals differ from the uninterrupted run's (%d against %d)", len(ob.finals), len(oa.finals))
	}
}
