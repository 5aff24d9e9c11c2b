package stagetwo

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/operator/window"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/wire"
)

// statefulTopo has a plain route, a window route and an assembly route
// over one input, all evaluated for every record (match: all): stage one
// writes repartitioned records for both stateful routes.
var statefulTopo = []string{
	"event_time: {field: ts, format: epoch_ms, max_ahead: 1h}\n",
	"routing: {match: all, default: drop}\n",
	`routes:
  - {name: infos, topic: infos, when: 'level == "INFO"', key: service}
  - name: errors
    topic: errors.per-service
    when: level == "ERROR"
    window: {type: tumbling, size: 10s, grace: 1s, group_by: service, late_topic: errors.late,
             aggregates: [{name: n, fn: count}, {name: max_latency, fn: max, of: latency_ms}]}
  - name: user-errors
    topic: user-errors
    assemble:
      id: user_id
      parts:
        - {name: error, source: errs}
        - {name: warn, source: warns}
      ttl: 10s
      time: event
      retention: 1m
      incomplete_topic: user-errors.incomplete
      duplicate_topic: user-errors.duplicate
  - {name: warns, topic: warns, when: 'level == "WARN"'}
  - {name: errs, topic: errs, when: 'level == "ERROR"'}
`,
}

// statefulRun is one window task and one assembly task, in memory, fed
// by the engine's stage one.
type statefulRun struct {
	top        *plan.Plan
	e          *recordRunner
	wrep, arep string
	wtask      *windowTask
	atask      *assemblyTask
	now        time.Time
}

func newStatefulRun(t testing.TB, top *plan.Plan, e *recordRunner) *statefulRun {
	t.Helper()
	ws, err := newWindowStage(top, changelog.MemoryBuilder())
	if err != nil {
		t.Fatal(err)
	}
	as, err := newAssemblyStage(top)
	if err != nil {
		t.Fatal(err)
	}
	r := &statefulRun{top: top, e: e, now: time.UnixMilli(1_790_000_000_000)}
	for rep, wr := range ws.routes {
		st := changelog.NewMemory()
		op, err := window.New(wr.spec, st)
		if err != nil {
			t.Fatal(err)
		}
		r.wrep, r.wtask = rep, &windowTask{route: wr, st: st, op: op}
	}
	for rep, ar := range as.routes {
		st := changelog.NewMemory()
		op, err := assembly.New(ar.spec, st)
		if err != nil {
			t.Fatal(err)
		}
		r.arep, r.atask = rep, &assemblyTask{route: ar, st: st, op: op}
	}
	if r.wtask == nil || r.atask == nil {
		t.Fatal("the fuzz topology needs a window and an assembly route")
	}
	return r
}

// one runs an input record through stage one and every repartitioned
// output through its stage two, checking that the input is counted
// exactly once (routed, dirty or dropped) and that every repartitioned
// record is counted exactly once at stage two: aggregated or late
// (window), a part new, duplicate or of a completed assembly (held or
// emitted), or dirty with a stage and reason.
func (s *statefulRun) one(t *testing.T, r *kgo.Record) {
	t.Helper()
	tally := metrics.NewTally()
	outs := s.e.Process(r, tally)
	checkConserved(t, s.top, r, outs, tally)
	checkOutputs(t, s.top, r, outs, tally)
	for _, o := range outs {
		// Stage two reads what the broker gives back: offsets and a
		// timestamp set, the producer's partition.
		o.Partition, o.Offset = 0, r.Offset
		var st2 []*kgo.Record
		var err error
		t2 := metrics.NewTally()
		switch o.Topic {
		case s.wrep:
			if st2, err = s.e.processRepartitioned(o, s.wtask, t2); err != nil {
				t.Fatalf("window store failed: %v", err)
			}
			dirty := stageTwoDirty(t, s.top, st2, t2)
			if n := t2.Aggregated["errors"] + t2.Late["errors"] + dirty; n != 1 {
				t.Fatalf("window stage two: aggregated %d + late %d + dirty %d != 1 for %q", t2.Aggregated["errors"], t2.Late["errors"], dirty, r.Value)
			}
		case s.arep:
			s.now = s.now.Add(time.Millisecond)
			if st2, err = s.e.processAssemblyRecord(o, s.atask, s.now, t2); err != nil {
				t.Fatalf("assembly store failed: %v", err)
			}
			parts := 0
			for _, n := range t2.AssemblyParts {
				parts += n
			}
			if n := parts + stageTwoDirty(t, s.top, st2, t2); n != 1 {
				t.Fatalf("assembly stage two: %v parts, dirty %v for %q", t2.AssemblyParts, t2.Dirty, r.Value)
			}
		default:
			continue
		}
		if t2.Repartitioned[o.Topic] != 1 {
			t.Fatalf("stage two consumed %v", t2.Repartitioned)
		}
		for _, x := range st2 {
			if x.Topic == s.wrep || x.Topic == s.arep {
				t.Fatalf("stage two wrote back to a repartition topic %s", x.Topic)
			}
			if stageone.RecordSize(x) > s.top.Dirty.MaxRecordBytes {
				t.Fatalf("stage two output to %s is %d bytes", x.Topic, stageone.RecordSize(x))
			}
		}
	}
}

// stageTwoDirty counts stage two's dirty records, each of which must
// carry a stage and a reason and be counted once.
func stageTwoDirty(t *testing.T, top *plan.Plan, outs []*kgo.Record, tally *metrics.Tally) int {
	t.Helper()
	n := 0
	for _, o := range outs {
		if o.Topic != top.Dirty.Topic {
			continue
		}
		n++
		if wire.String(o.Headers, wire.HeaderStage) == "" || wire.String(o.Headers, wire.HeaderReason) == "" {
			t.Fatalf("dirty record without stage or reason: %v", o.Headers)
		}
	}
	counted := 0
	for _, c := range tally.Dirty {
		counted += c
	}
	if counted != n {
		t.Fatalf("%d dirty records, %d counted", n, counted)
	}
	return n
}

// FuzzStateful feeds arbitrary bytes, split into up to 16 records at
// newlines (so state builds up within one input), through decode, route,
// window and assembly, and checks conservation at both stages for every
// record (statefulRun.one).
func FuzzStateful(f *testing.F) {
	ts := itoa(recordTime.UnixMilli())
	valid := []string{
		`{"level":"ERROR","ts":` + ts + `,"service":"auth","user_id":"u1","latency_ms":5}`,
		`{"level":"WARN","ts":` + ts + `,"service":"auth","user_id":"u1"}`,
		`{"level":"INFO","ts":` + ts + `,"service":"auth"}`,
		`{"level":"ERROR","ts":1,"service":"auth","user_id":"u1","latency_ms":"x"}`,
		`{"level":"ERROR","ts":` + ts + `,"service":{"a":1},"user_id":{"b":2},"latency_ms":1e308}`,
		`{"level":"WARN","ts":` + ts + `,"user_id":null}`,
		`{"level":"ERROR","ts":` + ts + `}`,
	}
	f.Add([]byte(strings.Join(valid, "\n")), int64(0))
	for _, v := range valid {
		f.Add([]byte(v), int64(1))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), int64(2))
	}
	for _, h := range hostileValues(ts) {
		f.Add(h, int64(3))
	}
	top := topo(f, statefulTopo...)
	e := newEngine(top)
	f.Fuzz(func(t *testing.T, data []byte, off int64) {
		s := newStatefulRun(t, top, e)
		recs := bytes.SplitN(data, []byte("\n"), 16)
		for i, v := range recs {
			r := &kgo.Record{Topic: top.Inputs[0].Topic, Key: v, Value: v, Offset: off + int64(i), Timestamp: recordTime}
			if len(v) == 0 && i%2 == 1 {
				r.Value = nil // a tombstone
			}
			s.one(t, r)
		}
	})
}

// hostileValues are the values of TestHostileInput (docs/reliability.md's
// table), as fuzz seeds.
func hostileValues(ts string) [][]byte {
	return [][]byte{
		[]byte(`{"level":"INFO","ts":1`), []byte(`{"level":"INFO"} x`), []byte(`{'level':'INFO'}`),
		[]byte(`{"level":"INFO",}`), []byte(`{"level":"INFO","ts":NaN}`), []byte(`{"level":"INFO"}{"level":"ERROR"}`),
		[]byte("{\"level\":\"IN\x01FO\"}"), []byte("{\"level\":\"\xff\xfe\"}"),
		[]byte(`{"level":"\ud800","ts":` + ts + `}`),
		[]byte(strings.Repeat(`{"a":`, 10_000) + "1" + strings.Repeat("}", 10_000)),
		[]byte(strings.Repeat("[", 10_000)), []byte(" \n\t"), []byte(`[1,2]`), []byte(`"s"`), []byte(`null`),
		[]byte(`{"level":"INFO","level":"ERROR","ts":` + ts + `,"service":"a"}`),
		[]byte(`{"level":"ERROR","ts":1e400}`), []byte(`{"level":"ERROR","ts":-5}`), []byte(`{"level":"ERROR","ts":-99999999999999999}`),
		[]byte(`{"level":"ERROR","ts":253402300800000}`), []byte(`{"level":"ERROR","ts":"1"}`), []byte(`{"level":"ERROR","ts":{}}`),
		[]byte(`{"level":7,"ts":` + ts + `}`),
		[]byte(`{"level":"ERROR","ts":` + ts + `,"pad":"` + strings.Repeat("x", 1<<20) + `"}`),
	}
}

// TestStatefulFuzzHarness: the fuzz harness really reaches both stages'
// state: a joined ERROR and WARN of one user and an ERROR window.
func TestStatefulFuzzHarness(t *testing.T) {
	top := topo(t, statefulTopo...)
	s := newStatefulRun(t, top, newEngine(top))
	ts := itoa(recordTime.UnixMilli())
	for i, v := range []string{
		`{"level":"ERROR","ts":` + ts + `,"service":"auth","user_id":"u1","latency_ms":5}`,
		`{"level":"WARN","ts":` + ts + `,"service":"auth","user_id":"u2"}`,
	} {
		s.one(t, &kgo.Record{Topic: "in", Value: []byte(v), Offset: int64(i), Timestamp: recordTime})
	}
	if s.wtask.op.OpenWindows() != 1 || s.atask.op.Open() != 2 {
		t.Fatalf("open windows %d, open assemblies %d; want 1 and 2", s.wtask.op.OpenWindows(), s.atask.op.Open())
	}
}
