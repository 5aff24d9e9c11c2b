package itest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// The window of internal/runtime/testdata/errors-per-service.yaml, which the
// oracle below simulates independently of the router's operator.
const (
	winSize  = int64(10_000)
	winGrace = int64(1_000)
	winRoute = "errors"
)

// windowServices are gen's services: one far-future flush event each.
var windowServices = []string{"checkout", "payments", "search", "auth", "inventory", "shipping", "profile", "gateway"}

var serviceRe = regexp.MustCompile(`"service":"([^"]+)"`)

// windowRun is one application over the shared input: its own
// application id (group, transactional ids), output and internal topics.
type windowRun struct {
	*scenario
	tag         string
	results     string // the route's topic: window results
	late        string // the route's late_topic
	dirty       string
	repartition string
	changelog   string
}

// derivedRun is a scenario of its own (application id base.app-tag, its
// own temp dir) over base's input topic, events and clients, running the
// topology at src with each replacement applied (every one must match, so
// a changed file fails here, named). It returns the scenario, its
// topology file written, and the compiled topology; its group, output and
// internal topics are deleted when the test ends (kept when it failed).
func (base *scenario) derivedRun(tag, src string, replacements [][2]string) (*scenario, *plan.Plan) {
	t := base.t
	prefix := base.app + "-" + tag
	s := &scenario{
		t: t, name: base.name + "-" + tag, app: prefix, input: base.input, dir: t.TempDir(),
		brokers: base.brokers, cl: base.cl, adm: base.adm, rng: base.rng,
		events: base.events, byID: base.byID, want: map[string]int{}, started: base.started,
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	for _, r := range replacements {
		if !strings.Contains(y, r[0]) {
			t.Fatalf("%s changed: %q not found; update the test that runs it", src, r[0])
		}
		y = strings.ReplaceAll(y, r[0], r[1])
	}
	s.config = filepath.Join(s.dir, "topology.yaml")
	if err := os.WriteFile(s.config, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadFile(s.config)
	if err != nil {
		t.Fatalf("per-run topology: %v", err)
	}
	top, err := plan.Compile(cfg, s.dir+"/")
	if err != nil {
		t.Fatalf("per-run topology: %v", err)
	}
	s.outputs = top.OutputTopics()
	slices.Sort(s.outputs)
	t.Cleanup(s.cleanup) // group and output topics (the input too: harmless twice)
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		repartition, changelogs := top.InternalTopics()
		_, _ = s.adm.DeleteTopics(ctx, append(repartition, changelogs...)...)
	})
	return s, top
}

// newWindowRun writes internal/runtime/testdata/errors-per-service.yaml with this
// run's application id and topic names into its own temp dir. The run
// shares base's input topic, events and clients.
func newWindowRun(base *scenario, tag, watermark string) *windowRun {
	t := base.t
	prefix := base.app + "-" + tag
	s, top := base.derivedRun(tag, "../internal/runtime/testdata/errors-per-service.yaml", [][2]string{
		// The oracle replays the repartition topic read back in full:
		// no purge may delete what it has not read yet.
		{"application_id: errors-per-service\n", "application_id: " + prefix + "\ntopics:\n  purge_interval: 24h\n"},
		{"  - topic: logs\n", "  - topic: " + base.input + "\n"},
		{"topic: errors.", "topic: " + prefix + ".errors."}, // topic, late_topic and dirty topic
		{"      emit: update\n", "      emit: update\n      watermark: " + watermark + "\n"},
	})
	rt := top.Route(winRoute)
	if rt == nil || rt.Window == nil {
		t.Fatalf("per-run topology has no window route %q", winRoute)
	}
	// The oracle (simulate) knows this window and these aggregates.
	c := rt.Window.Spec
	if c.Type != config.WindowTumbling || c.Size.D().Milliseconds() != winSize || c.Grace.D().Milliseconds() != winGrace ||
		c.MaxOutOfOrderness.D() != 0 || c.IdleTimeout.D() != 0 || c.GroupBy != "service" || c.Watermark != watermark ||
		len(c.Aggregates) != 2 || c.Aggregates[0] != (config.Aggregate{Name: "n", Fn: "count"}) ||
		c.Aggregates[1] != (config.Aggregate{Name: "max_latency", Fn: "max", Of: "latency_ms"}) {
		t.Fatalf("internal/runtime/testdata/errors-per-service.yaml changed its window (%+v); update itest's oracle", c)
	}
	w := &windowRun{scenario: s, tag: tag, results: rt.Topic, late: rt.Window.Spec.LateTopic, dirty: top.Dirty.Topic,
		repartition: rt.Window.RepartitionTopic, changelog: rt.Window.ChangelogTopic}
	for _, tp := range []string{w.results, w.late, w.dirty, w.repartition, w.changelog} {
		if !strings.HasPrefix(tp, prefix) {
			t.Fatalf("run %s writes %q, not one of its own topics", tag, tp)
		}
	}
	s.topicOf = map[string]string{"dirty": w.dirty, winRoute: w.results}
	return w
}

// waitWindowDone waits until the run has nothing left to do: the group's
// input lag is 0, its lag on the repartition topic is 0 (every record
// stage one wrote was consumed by stage two, in a committed transaction),
// and no output partition has an open transaction. It returns the
// repartition topic, read read_committed: stage two's input, in order.
func (w *windowRun) waitWindowDone(p *producer, limit time.Duration, live ...*router) map[int32][]*kgo.Record {
	t := w.t
	t.Helper()
	deadline := time.Now().Add(limit)
	w.waitCaughtUp(p, limit, live...)
	// Input lag 0: stage one wrote everything it ever will (its outputs
	// commit with the input offsets), so the repartition topic, once no
	// transaction is open on it, is final.
	rep := map[int32][]*kgo.Record{}
	next := map[int32]int64{} // offset after the last data record
	for _, r := range w.readTopics([]string{w.repartition}, true, time.Until(deadline)) {
		rep[r.Partition] = append(rep[r.Partition], r)
		next[r.Partition] = r.Offset + 1
	}
	waitFor(t, time.Until(deadline), "run "+w.tag+": repartition lag 0", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		offs, err := w.adm.FetchOffsets(ctx, w.app)
		cancel()
		behind := 0
		var lag int64
		for part, n := range next {
			o, ok := offs.Lookup(w.repartition, part)
			if err != nil || !ok || o.Err != nil || o.At < n {
				behind++
				if ok && o.Err == nil {
					lag += n - max(o.At, 0)
				}
			}
		}
		if behind == 0 {
			return true, ""
		}
		requireRunning(t, live...)
		return false, fmt.Sprintf("%d partitions, %d records behind (err %v)", behind, lag, err)
	})
	w.waitSettled(time.Until(deadline))
	return rep
}

// windowResult is one record of the results topic.
type windowResult struct {
	Key         string `json:"key"`
	WindowStart int64  `json:"window_start"`
	WindowEnd   int64  `json:"window_end"`
	Aggregates  struct {
		N          *int64   `json:"n"`
		MaxLatency *float64 `json:"max_latency"`
	} `json:"aggregates"`
	Revision int64 `json:"revision"`
	Final    bool  `json:"final"`
}

// windowOutcome is what one run wrote, read back read_committed.
type windowOutcome struct {
	finals   map[string]string // output key -> value JSON of its final result
	finalAgg map[string]oracleWin
	all      []string // "key|revision|value" of every result, sorted
	lateIDs  map[string]bool
	counted  int64 // sum of the final counts
	updates  int   // non-final results
	dirty    int
}

// collect reads the run's outputs and checks what needs no other run:
// one final per window, no late or dirty record twice, every late record
// an ERROR event.
func (w *windowRun) collect(flushTS int64) windowOutcome {
	t := w.t
	t.Helper()
	o := windowOutcome{finals: map[string]string{}, finalAgg: map[string]oracleWin{}, lateIDs: map[string]bool{}}
	for _, r := range w.readBack(true, 2*time.Minute) {
		switch r.topic {
		case w.dirty:
			o.dirty++
		case w.late:
			id := valueID(r.value)
			if ev := w.byID[id]; ev == nil || ev.Kind != gen.KindError {
				t.Errorf("run %s: late record %q is not an ERROR event", w.tag, id)
			}
			if o.lateIDs[id] {
				t.Errorf("run %s: late record %s written twice", w.tag, id)
			}
			o.lateIDs[id] = true
		case w.results:
			var res windowResult
			if err := json.Unmarshal(r.value, &res); err != nil {
				t.Fatalf("run %s: window result %q: %v", w.tag, r.value, err)
			}
			key := string(r.key)
			if want := res.Key + "@" + strconv.FormatInt(res.WindowStart, 10); key != want {
				t.Errorf("run %s: result keyed %q holds window %s", w.tag, key, want)
			}
			if res.Aggregates.N == nil || res.Aggregates.MaxLatency == nil {
				t.Fatalf("run %s: window result without its aggregates: %s", w.tag, r.value)
			}
			o.all = append(o.all, key+"|"+strconv.FormatInt(res.Revision, 10)+"|"+string(r.value))
			if !res.Final {
				o.updates++
				continue
			}
			if res.WindowEnd+winGrace > flushTS {
				t.Errorf("run %s: final result for window %s, which the flush events cannot have closed", w.tag, key)
			}
			if _, dup := o.finals[key]; dup {
				t.Errorf("run %s: window %s has more than one final result", w.tag, key)
			}
			o.finals[key] = string(r.value)
			o.finalAgg[key] = oracleWin{n: *res.Aggregates.N, max: *res.Aggregates.MaxLatency}
			o.counted += *res.Aggregates.N
		default:
			t.Fatalf("run %s: record from unexpected topic %s", w.tag, r.topic)
		}
	}
	slices.Sort(o.all)
	return o
}

// oracleWin is a window's final aggregates.
type oracleWin struct {
	n   int64
	max float64
}

// simulate is the oracle of stage two, sharing no code with the router:
// each repartition partition, in offset order, through a tumbling window
// (size winSize, grace winGrace, no out-of-orderness) whose watermark is
// the largest event time seen in that partition. A record is late when
// its window's end + grace is at or below the watermark; a window is
// final once the watermark reaches its end + grace. The event time and
// the aggregated field come from the record's JSON value, not from the
// router's headers.
//
// With aligned watermarks a record is late when its window's end + grace
// is at or below its own input partition's watermark (the header stage
// one stamped: that partition's largest event time before the record),
// and every window before the flush is final (the flush passed every
// input partition). Marks carry no data and are skipped.
func simulate(t *testing.T, rep map[int32][]*kgo.Record, aligned bool, flushTS int64) (map[string]oracleWin, map[string]bool) {
	t.Helper()
	finals, late := map[string]oracleWin{}, map[string]bool{}
	for _, recs := range rep {
		wm := int64(math.MinInt64)
		open := map[string]oracleWin{}
		ends := map[string]int64{}
		for _, r := range recs {
			if isMarkRecord(r) {
				continue
			}
			if aligned {
				wm = math.MinInt64
				if h := headerOf(r, "sidestream.source.max_event_time"); h != "" {
					v, err := strconv.ParseInt(h, 10, 64)
					if err != nil {
						t.Fatalf("repartition record %s/%d@%d: source max %q: %v", r.Topic, r.Partition, r.Offset, h, err)
					}
					wm = v
				} else if _, ok := headerValue(r, "sidestream.source.max_event_time"); !ok {
					t.Fatalf("repartition record %s/%d@%d has no source progress header", r.Topic, r.Partition, r.Offset)
				}
			}
			var v struct {
				ID      string  `json:"id"`
				TS      int64   `json:"ts"`
				Latency float64 `json:"latency_ms"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("repartition record %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
			}
			start := v.TS - ((v.TS%winSize)+winSize)%winSize
			if start+winSize+winGrace <= wm {
				late[v.ID] = true
				continue
			}
			key := string(r.Key) + "@" + strconv.FormatInt(start, 10)
			w, ok := open[key]
			if !ok || v.Latency > w.max {
				w.max = v.Latency
			}
			w.n++
			open[key] = w
			ends[key] = start + winSize
			if !aligned {
				wm = max(wm, v.TS)
			}
		}
		for key, w := range open {
			if (!aligned && ends[key]+winGrace <= wm) || (aligned && ends[key]+winGrace <= flushTS) {
				finals[key] = w
			}
		}
	}
	return finals, late
}

var restoredRe = regexp.MustCompile(`window state restored.* records=([0-9]+)`)

var tailRe = regexp.MustCompile(`window state restored.* from_offset=([0-9]+)`)

// tailRestores counts the restores that started from a local checkpoint
// (from_offset > 0): only the changelog's tail was read.
func (s *scenario) tailRestores() int { return s.countRestores(tailRe) }

// restoresWithState counts the "window state restored" log lines of the
// scenario's routers that restored at least one changelog record.
func (s *scenario) restoresWithState() int { return s.countRestores(restoredRe) }

// countRestores counts the "window state restored" log lines of the
// scenario's routers (each log once) whose field captured by re is not 0.
func (s *scenario) countRestores(re *regexp.Regexp) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	seen := map[string]bool{}
	for _, r := range s.routers {
		if seen[r.logPath] {
			continue
		}
		seen[r.logPath] = true
		for _, l := range r.logLines(0, "window state restored") {
			if m := re.FindStringSubmatch(l); m != nil && m[1] != "0" {
				n++
			}
		}
	}
	return n
}

// TestWindowRestartEquivalence: the window route of
// internal/runtime/testdata/errors-per-service.yaml (tumbling 10s, grace 1s, per
// service, count and max latency, late route) over 60,000 generated
// events whose event times are up to 5 s out of order, plus far-future
// ERROR events at the end so every earlier window closes. Two
// applications read the same input at the same time: run A, one
// uninterrupted process; run B, a process killed with SIGKILL at random
// moments 5 times and restarted each time, so stage two restores its
// state from the changelog mid-stream and aborted batches are replayed.
//
// Each run must count every ERROR event exactly once (in its window's
// final result or on the late route), with one final result per window,
// and must agree with an independent simulation of stage two over its own
// repartition topic. Then A's and B's final results and late records must
// be identical.
//
// Here the input is keyed by event id: every service's records come from
// all 6 input partitions, and each repartition partition interleaves them
// in an order set by timing, different in A and B. The window's watermark
// is aligned (the default): a record is late by its own input partition's
// progress, a window closes when every input partition passed it, so the
// finals' aggregates and the late set do not depend on that order. Update
// revisions (emit: update: how many updates a window got, and so the
// final's own revision number) do: they are reported, not compared. The flush is one
// event per service on every input partition.
func TestWindowRestartEquivalence(t *testing.T) {
	windowRestartEquivalence(t, "memory", "id", "aligned")
}

// TestWindowRestartEquivalencePebble is the same scenario with run B (and
// its restarts) on the pebble store, A on memory: B restores only the
// changelog after its local checkpoint, across kill -9. Here the input is
// keyed by service, so each repartition partition reads exactly one input
// partition in its order, and the window uses watermark: max (the task's
// largest event time): then every result, each update revision included,
// must be identical.
func TestWindowRestartEquivalencePebble(t *testing.T) {
	windowRestartEquivalence(t, "pebble", "service", "max")
}

func windowRestartEquivalence(t *testing.T, store, keyBy, watermark string) {
	const n = 60_000
	aligned := watermark == "aligned"
	// base owns the input topic, the events and the seed; its own
	// (logs-by-level) topology is never run.
	base := newScenario(t, "window_restart_equivalence", n)
	wantErrors := 0
	for i := range base.events {
		ev := &base.events[i]
		if ev.Kind == gen.KindError {
			wantErrors++
		}
		if m := serviceRe.FindSubmatch(ev.Value); m != nil && keyBy == "service" {
			ev.Key = m[1]
		}
	}
	// The flush: one ERROR per service an hour after the last event,
	// produced after every other event (by the same producer, so after
	// them in each partition). Its windows stay open.
	g := gen.New(0)
	flushTS := g.Base + int64(n)*g.Step + 3_600_000
	flushes := 0
	for _, svc := range windowServices {
		keys := [][]byte{[]byte(svc)}
		if keyBy == "id" {
			keys = keysForEveryPartition("flush-"+svc, 6)
		}
		for _, k := range keys {
			id := "flush-" + string(k)
			if keyBy == "service" {
				id = "flush-" + svc
			}
			v := fmt.Appendf(nil, `{"id":%q,"ts":%d,"level":"ERROR","service":%q,"latency_ms":1}`, id, flushTS, svc)
			base.events = append(base.events, gen.Event{ID: id, Key: k, Value: v, Kind: "flush", TS: flushTS})
			flushes++
		}
	}
	for i := range base.events { // the append may have moved them
		base.byID[base.events[i].ID] = &base.events[i]
	}

	a, b := newWindowRun(base, "a", watermark), newWindowRun(base, "b", watermark)
	p := base.startProducer(1500)
	ra := a.startRouter("a", fastGroup...)
	// With pebble, B (and its restarts, which inherit the environment)
	// keeps its state on disk, while A keeps the memory store: the
	// equivalence below then also says pebble's results equal memory's.
	if store == "pebble" {
		t.Setenv(config.EnvStateStore, "pebble")
		t.Setenv(config.EnvStateDir, t.TempDir())
	}
	rb := b.startRouter("b", fastGroup...)
	rb = b.killRestartLoop(p, rb, 5)

	repA := a.waitWindowDone(p, 2*time.Minute, ra)
	repB := b.waitWindowDone(p, 2*time.Minute, rb)
	ra.stop(40 * time.Second)
	rb.stop(40 * time.Second)

	outs := map[string]windowOutcome{}
	for _, run := range []struct {
		w   *windowRun
		rep map[int32][]*kgo.Record
	}{{a, repA}, {b, repB}} {
		w, rep := run.w, run.rep
		// Stage one: every ERROR event (and flush) on the repartition
		// topic exactly once, keyed by service.
		ids := map[string]int{}
		sameParts := true
		for part, recs := range rep {
			for _, r := range recs {
				if isMarkRecord(r) {
					continue
				}
				ids[valueID(r.Value)]++
				if m := serviceRe.FindSubmatch(r.Value); m == nil || string(m[1]) != string(r.Key) {
					t.Errorf("run %s: repartition record %s keyed %q", w.tag, r.Value, r.Key)
				}
				if headerOf(r, "sidestream.source.partition") != strconv.Itoa(int(part)) {
					sameParts = false
				}
			}
		}
		dups := 0
		for id, c := range ids {
			if ev := w.byID[id]; ev == nil || (ev.Kind != gen.KindError && ev.Kind != "flush") {
				t.Errorf("run %s: repartition record %s is not an ERROR event", w.tag, id)
			}
			dups += c - 1
		}
		if len(ids) != wantErrors+flushes || dups > 0 {
			t.Errorf("run %s: repartition topic holds %d distinct events (%d duplicates), want %d ERROR + %d flush",
				w.tag, len(ids), dups, wantErrors, flushes)
		}
		if keyBy == "service" && !sameParts {
			t.Errorf("run %s: a repartition partition holds records of another input partition: the determinism this test relies on is gone", w.tag)
		}

		o := w.collect(flushTS)
		outs[w.tag] = o
		if o.counted+int64(len(o.lateIDs)) != int64(wantErrors) {
			t.Errorf("run %s: ERROR events: %d counted in final windows + %d late = %d, want %d",
				w.tag, o.counted, len(o.lateIDs), o.counted+int64(len(o.lateIDs)), wantErrors)
		}
		if len(o.finals) == 0 || len(o.lateIDs) == 0 {
			t.Errorf("run %s: want both final windows and late records: %d finals, %d late", w.tag, len(o.finals), len(o.lateIDs))
		}
		// Stage two against the oracle over its own input.
		wantFinals, wantLate := simulate(t, rep, aligned, flushTS)
		if !maps.Equal(o.finalAgg, wantFinals) {
			t.Errorf("run %s: final results differ from the simulation of its repartition topic: %s", w.tag, diffWins(o.finalAgg, wantFinals))
		}
		if !maps.Equal(o.lateIDs, wantLate) {
			t.Errorf("run %s: %d late records, the simulation of its repartition topic says %d (%s)",
				w.tag, len(o.lateIDs), len(wantLate), diffSets(o.lateIDs, wantLate))
		}
		t.Logf("run %s: %d final windows counting %d, %d late, %d updates, %d dirty",
			w.tag, len(o.finals), o.counted, len(o.lateIDs), o.updates, o.dirty)
	}

	oa, ob := outs["a"], outs["b"]
	// Aligned: a final's aggregates; its revision (how many updates came
	// before it) depends on timing. Max over one partition each: the
	// whole value.
	sameFinals := maps.Equal(oa.finals, ob.finals)
	if aligned {
		sameFinals = maps.Equal(oa.finalAgg, ob.finalAgg)
	}
	sameLate := maps.Equal(oa.lateIDs, ob.lateIDs)
	sameAll := slices.Equal(oa.all, ob.all)
	if !sameFinals && aligned {
		t.Errorf("final aggregates differ between A and B: %s", diffWins(oa.finalAgg, ob.finalAgg))
	} else if !sameFinals {
		t.Errorf("final results differ between A and B: %s", diffStrMaps(oa.finals, ob.finals))
	}
	if !sameLate {
		t.Errorf("late records differ between A (%d) and B (%d): %s", len(oa.lateIDs), len(ob.lateIDs), diffSets(oa.lateIDs, ob.lateIDs))
	}
	if !sameAll && !aligned {
		t.Errorf("the results (every revision) differ between A (%d) and B (%d): %s", len(oa.all), len(ob.all), diffLists(oa.all, ob.all))
	}
	// What B's kills cost: records of aborted transactions (on its
	// outputs, repartition and changelog topics), which a read_committed
	// reader, stage two and a restore never see.
	all := append([]string{b.repartition, b.changelog}, b.outputs...)
	aborted := len(b.readTopics(all, false, time.Minute)) - len(b.readTopics(all, true, time.Minute))
	tails := b.tailRestores()
	if store == "pebble" && tails == 0 {
		t.Errorf("run b on pebble never restored from a local checkpoint (no \"window state restored\" line with from_offset > 0)")
	}
	line := fmt.Sprintf("scenario=window_restart_equivalence records=%d kills=%d restarts=%d errors=%d finals=%d late=%d updates=%d restores_with_state=%d tail_restores=%d aborted_invisible=%d input_key=%s watermark=%s store_b=%s identical_finals_late=%v identical_revisions=%v elapsed=%s",
		n+flushes, b.kills, b.restarts, wantErrors, len(oa.finals), len(oa.lateIDs), oa.updates,
		b.restoresWithState(), tails, aborted, keyBy, watermark, store, sameFinals && sameLate, sameAll, time.Since(base.started).Round(100*time.Millisecond))
	t.Log(line)
	fmt.Println(line)
}

// keysForEveryPartition returns one key per partition of n, each
// prefix-j for the first j that Kafka's key hash (murmur2) sends there.
func keysForEveryPartition(prefix string, n int) [][]byte {
	p := kgo.StickyKeyPartitioner(nil).ForTopic("")
	out := make([][]byte, n)
	for j, found := 0, 0; found < n; j++ {
		k := []byte(prefix + "-" + strconv.Itoa(j))
		if part := p.Partition(&kgo.Record{Key: k}, n); out[part] == nil {
			out[part] = k
			found++
		}
	}
	return out
}

// valueID is the "id" field of a record's JSON value (gen.IDOf knows
// only generated ids, not the flush events').
func valueID(v []byte) string {
	var x struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(v, &x)
	return x.ID
}

// isMarkRecord: a watermark mark (a source's progress, no data).
func isMarkRecord(r *kgo.Record) bool {
	_, ok := headerValue(r, "sidestream.watermark.mark")
	return ok
}

// headerValue is header k of r; a repartition record's envelope
// (wire.HeaderRepartition) is read as the seven headers it stands for.
func headerValue(r *kgo.Record, k string) (string, bool) {
	for _, h := range wire.ExpandRepartition(r.Headers) {
		if h.Key == k {
			return string(h.Value), true
		}
	}
	return "", false
}

func headerOf(r *kgo.Record, k string) string {
	v, _ := headerValue(r, k)
	return v
}

// The diff helpers name a few differences, not all of them.

func diffWins(got, want map[string]oracleWin) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if w, ok := want[k]; !ok || w != got[k] {
			out = append(out, fmt.Sprintf("%s: got %+v, want %+v (present %v)", k, got[k], w, ok))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[k]; !ok {
			out = append(out, fmt.Sprintf("%s: missing, want %+v", k, want[k]))
		}
	}
	return firstFew(out)
}

func diffStrMaps(a, b map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if v, ok := b[k]; !ok || v != a[k] {
			out = append(out, fmt.Sprintf("%s: A %s, B %q", k, a[k], v))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: only in B: %s", k, b[k]))
		}
	}
	return firstFew(out)
}

func diffSets(a, b map[string]bool) string {
	var onlyA, onlyB int
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if !b[k] {
			onlyA++
			out = append(out, "only first: "+k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if !a[k] {
			onlyB++
			out = append(out, "only second: "+k)
		}
	}
	return fmt.Sprintf("%d only in the first, %d only in the second; %s", onlyA, onlyB, firstFew(out))
}

func diffLists(a, b []string) string {
	ca, cb := map[string]int{}, map[string]int{}
	for _, x := range a {
		ca[x]++
	}
	for _, x := range b {
		cb[x]++
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(ca)) {
		if ca[k] != cb[k] {
			out = append(out, fmt.Sprintf("A×%d B×%d %s", ca[k], cb[k], k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cb)) {
		if ca[k] == 0 {
			out = append(out, fmt.Sprintf("A×0 B×%d %s", cb[k], k))
		}
	}
	return fmt.Sprintf("%d differing entries; %s", len(out), firstFew(out))
}

func firstFew(s []string) string {
	if len(s) > 5 {
		return strings.Join(s[:5], "; ") + fmt.Sprintf("; ... %d more", len(s)-5)
	}
	return strings.Join(s, "; ")
}
