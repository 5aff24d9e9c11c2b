package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/stagetwo"
	"github.com/sidestream/sidestream/internal/wire"
)

// producePhase writes the next n events of g and returns how many are
// ERROR events (the ones the window route aggregates or sends late).
func producePhase(t *testing.T, brokers []string, g *gen.Generator, n int) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	errs := 0
	for range n {
		ev := g.Next()
		if ev.Kind == gen.KindError {
			errs++
		}
		cl.Produce(context.Background(), &kgo.Record{Key: ev.Key, Value: ev.Value}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return errs
}

// drain waits until r has consumed inputs input records and stage two has
// taken every record stage one routed to it.
func drain(t *testing.T, r *running, inputs int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		s := r.p.Metrics().Snapshot()
		in := testutil.ToFloat64(r.p.Metrics().Consumed.WithLabelValues("logs"))
		stage2 := testutil.ToFloat64(r.p.Metrics().Repartitioned.WithLabelValues(r.p.top.Routes[0].Window.RepartitionTopic))
		if int(in) >= inputs && stage2 >= s.Routed && marksRead(r) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained: %v inputs of %d, %+v", in, inputs, s)
		}
	}
}

// marksRead: every watermark mark this instance wrote was read back
// (each mark of a commit moves the windows only once stage two reads it).
func marksRead(r *running) bool {
	m := r.p.Metrics().Marks
	return testutil.ToFloat64(m.WithLabelValues("read")) >= testutil.ToFloat64(m.WithLabelValues("written"))
}

// flushEveryPartition writes, to every partition of logs, one ERROR event
// per service at flushTS: every input partition's progress passes every
// window before it, so aligned watermarks close them all. It returns how
// many records it wrote.
func flushEveryPartition(t *testing.T, brokers []string, flushTS int64) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("logs"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	n := 0
	for p := range int32(6) {
		for _, svc := range []string{"checkout", "payments", "search", "auth", "inventory", "shipping", "profile", "gateway"} {
			v := fmt.Sprintf(`{"id":"flush-%s-%d","ts":%d,"level":"ERROR","service":%q,"latency_ms":1}`, svc, p, flushTS, svc)
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte(svc), Value: []byte(v), Partition: p}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	return n
}

func restored(r *running) int {
	return int(testutil.ToFloat64(r.p.Metrics().RestoredRecords.WithLabelValues("errors")))
}

// TestPebbleRestoresOnlyTheTail: instance a (pebble) processes a first
// part and stops; instance c (memory, so no local state) processes a
// second part; instance b reopens a's pebble directory and must read
// exactly the changelog records c wrote, no more; c, without local state,
// reads the whole changelog. At the end the pebble stores equal memory
// stores restored from the whole changelog, their checkpoints are the
// changelog's end, and every ERROR event was counted exactly once (final
// window result or late route) across the three runs.
func TestPebbleRestoresOnlyTheTail(t *testing.T) {
	eachGuarantee(t, testPebbleTail)
}

func testPebbleTail(t *testing.T, g config.Guarantee) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	top := windowTopology(t, brokers)
	top.Settings.Guarantee = g
	dir := t.TempDir()
	pebble := WithStoreBuilder(changelog.PebbleBuilder(dir))
	gn := gen.New(5)
	const phase = 6000
	wantErrors := producePhase(t, brokers, gn, phase)

	a := start(t, top, "a", pebble)
	drain(t, a, phase)
	a.stop(t)
	checkSourceProgress(t, brokers, top)
	if restored(a) != 0 {
		t.Fatalf("a restored %d records from an empty changelog", restored(a))
	}
	written := func(r *running) int {
		return int(testutil.ToFloat64(r.p.Metrics().Changelog.WithLabelValues("errors")))
	}

	wantErrors += producePhase(t, brokers, gn, phase)
	cm := start(t, top, "c") // memory store: restores everything
	drain(t, cm, phase)
	cm.stop(t)
	if restored(cm) != written(a) {
		t.Fatalf("the memory store restored %d records, a wrote %d", restored(cm), written(a))
	}

	wantErrors += producePhase(t, brokers, gn, phase)
	b := start(t, top, "b", pebble)
	drain(t, b, phase)
	// /tasks shows a window task's local checkpoint once the task has
	// processed records (a rebalance resets the entries until then): feed
	// b a few more and look.
	wantErrors += producePhase(t, brokers, gn, 200)
	shown := func() bool {
		for _, ts := range b.p.Tasks() {
			if ts.Route == "errors" && ts.LocalCheckpoint != nil && *ts.LocalCheckpoint > 0 {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(time.Minute); !shown(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/tasks shows no local checkpoint for b's window tasks: %+v", b.p.Tasks())
		}
	}
	drain(t, b, phase+200)
	b.stop(t)
	if restored(b) != written(cm) {
		t.Fatalf("b restored %d changelog records; the tail after a's checkpoint holds %d (c's writes)", restored(b), written(cm))
	}
	if restored(b) >= restored(cm)+written(cm) {
		t.Fatalf("b read %d records: no fewer than a full restore (%d)", restored(b), restored(cm)+written(cm))
	}
	t.Logf("changelog records: a wrote %d, c wrote %d; c restored %d (full), b restored %d (tail)",
		written(a), written(cm), restored(cm), restored(b))

	// The stores on disk equal memory stores restored from the whole
	// changelog, and their checkpoints are its end.
	q := restorer(t, top, brokers)
	clTopic := top.Routes[0].Window.ChangelogTopic
	ends, err := q.adm.ListEndOffsets(context.Background(), clTopic)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	ends.Each(func(o kadm.ListedOffset) {
		mem := changelog.NewMemory()
		if _, _, err := q.restore(context.Background(), "errors", clTopic, o.Partition, mem); err != nil {
			t.Fatal(err)
		}
		pb, err := changelog.OpenPebble(filepath.Join(dir, clTopic, fmt.Sprint(o.Partition)))
		if err != nil {
			t.Fatal(err)
		}
		defer pb.Close()
		// The checkpoint leaves nothing to restore (only the last
		// transaction's commit marker may follow it).
		if off, ok := pb.Checkpoint(); o.Offset > 0 {
			n, from, err := q.restore(context.Background(), "errors", clTopic, o.Partition, pb)
			if !ok || err != nil || n != 0 || from != off || off < o.Offset-1 {
				t.Errorf("partition %d: checkpoint %d (%v), changelog end %d: %d records to restore from %d, %v", o.Partition, off, ok, o.Offset, n, from, err)
			}
		}
		if got, want := dumpAll(t, pb), dumpAll(t, mem); !maps.Equal(got, want) {
			t.Errorf("partition %d: pebble holds %d keys, the changelog %d; they differ", o.Partition, len(got), len(want))
		}
		if pb.Len() != mem.Len() || pb.SizeBytes() != mem.SizeBytes() {
			t.Errorf("partition %d: pebble counters %d/%d, memory %d/%d", o.Partition, pb.Len(), pb.SizeBytes(), mem.Len(), mem.SizeBytes())
		}
		if mem.Len() > 0 {
			checked++
		}
		// A checkpoint past the changelog's end (a recreated topic) is a
		// changelog loss: under fail the store stays as it is; under
		// start_empty it is wiped and restored in full.
		if o.Offset > 0 {
			if err := pb.Set([]byte("junk"), []byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := pb.Commit(o.Offset+100, time.Now()); err != nil {
				t.Fatal(err)
			}
			q.top.Settings.State.OnChangelogLoss = config.ChangelogLossFail
			var le *stagetwo.ChangelogLossError
			if _, _, err := q.restore(context.Background(), "errors", clTopic, o.Partition, pb); !errors.As(err, &le) || le.Reason != wire.LossCheckpointPastEnd {
				t.Errorf("partition %d: restore over a checkpoint past the end under fail: %v", o.Partition, err)
			}
			if _, ok, _ := pb.Get([]byte("junk")); !ok {
				t.Errorf("partition %d: a failed restore wiped the local state", o.Partition)
			}
			q.top.Settings.State.OnChangelogLoss = config.ChangelogLossStartEmpty
			wipes := testutil.ToFloat64(q.m.StateWipes.WithLabelValues("errors", "past_end"))
			n, from, err := q.restore(context.Background(), "errors", clTopic, o.Partition, pb)
			q.top.Settings.State.OnChangelogLoss = ""
			if err != nil || from != 0 || n == 0 || !maps.Equal(dumpAll(t, pb), dumpAll(t, mem)) {
				t.Errorf("partition %d: restore over a bad checkpoint: %d records from %d, %v", o.Partition, n, from, err)
			}
			if testutil.ToFloat64(q.m.StateWipes.WithLabelValues("errors", "past_end")) != wipes+1 {
				t.Errorf("partition %d: the wipe was not counted", o.Partition)
			}
			// A checkpoint older than the changelog's delete.retention.ms
			// (a day by default) may have missed a compacted tombstone.
			off, _ := pb.Checkpoint()
			if err := pb.Commit(off, time.Now().Add(-25*time.Hour)); err != nil {
				t.Fatal(err)
			}
			n, from, err = q.restore(context.Background(), "errors", clTopic, o.Partition, pb)
			if err != nil || from != 0 || n == 0 || testutil.ToFloat64(q.m.StateWipes.WithLabelValues("errors", "older_than_delete_retention")) == 0 {
				t.Errorf("partition %d: restore over a day-old checkpoint: %d records from %d, %v", o.Partition, n, from, err)
			}
		}
	})
	if checked == 0 {
		t.Fatal("no partition holds state: nothing was compared")
	}

	// Close every window, then check every ERROR event was counted once.
	flushTS := gn.Base + int64(4*phase+200)*gn.Step + 3_600_000
	flushes := flushEveryPartition(t, brokers, flushTS)
	f := start(t, top, "b", pebble)
	drain(t, f, flushes)
	f.stop(t)
	countFinals(t, brokers, top, flushTS, wantErrors)
}

// restorer is a processor that is never run, with an admin client on
// brokers: enough to call restore directly.
func restorer(t *testing.T, top *plan.Plan, brokers []string) *Processor {
	t.Helper()
	q, err := New(top, WithLogger(testLogger()))
	if err != nil {
		t.Fatal(err)
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admCl.Close)
	q.adm = kadm.NewClient(admCl)
	return q
}

func dumpAll(t *testing.T, s changelog.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err := s.Range(nil, func(k, v []byte) bool { out[string(k)] = string(v); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

// countFinals checks that every final window result (before flushTS) is
// the only final of its window, that late records carry the windows they
// missed, and that the finals and the late route together count every
// ERROR event exactly once. It returns the late records, the events
// counted in finals, and the windows.
func countFinals(t *testing.T, brokers []string, top *plan.Plan, flushTS int64, wantErrors int) (late, counted, windows int) {
	t.Helper()
	rt := top.Routes[0]
	finals := map[string]int{}
	for _, r := range readCommitted(t, brokers, rt.Topic, rt.Window.Spec.LateTopic) {
		if r.Topic == rt.Window.Spec.LateTopic {
			late++
			if h := wire.String(r.Headers, wire.HeaderLateWins); h == "" {
				t.Fatalf("late record without %s header", wire.HeaderLateWins)
			}
			continue
		}
		var res struct {
			WindowStart int64          `json:"window_start"`
			Aggregates  map[string]any `json:"aggregates"`
			Final       bool           `json:"final"`
		}
		if err := json.Unmarshal(r.Value, &res); err != nil {
			t.Fatalf("window result %q: %v", r.Value, err)
		}
		if !res.Final || res.WindowStart >= flushTS-10_000 {
			continue
		}
		finals[string(r.Key)]++
		counted += int(res.Aggregates["n"].(float64))
	}
	for k, n := range finals {
		if n != 1 {
			t.Errorf("window %s has %d final results, want 1", k, n)
		}
	}
	if counted+late != wantErrors {
		t.Fatalf("ERROR events: %d counted in final windows + %d late = %d, want %d", counted, late, counted+late, wantErrors)
	}
	return late, counted, len(finals)
}

// checkSourceProgress: the committed offset of every input partition
// carries, as its metadata, the largest event time decoded in that
// partition before the offset (what aligned watermarks restore from).
func checkSourceProgress(t *testing.T, brokers []string, top *plan.Plan) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), top.Settings.ApplicationID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	// Stage one raises a source's maximum event time for each record it
	// decodes.
	eng := stageone.New(top)
	for _, r := range readCommitted(t, brokers, "logs") {
		o, ok := offs.Lookup("logs", r.Partition)
		if !ok || r.Offset >= o.At {
			continue
		}
		m, seen := want[r.Partition]
		if !seen {
			m = math.MinInt64
		}
		if _, err := eng.ProcessFrom(context.Background(), r, &m, metrics.NewTally()); err != nil {
			t.Fatal(err)
		}
		if m != math.MinInt64 {
			want[r.Partition] = m
		}
	}
	if len(want) == 0 {
		t.Fatal("no input partition has a committed offset past a decodable record")
	}
	for part, m := range want {
		o, _ := offs.Lookup("logs", part)
		if got, _ := decodeOffsetMeta(o.Metadata); got != m {
			t.Errorf("logs[%d] committed at %d with metadata %q: max event time %d, want %d", part, o.At, o.Metadata, got, m)
		}
	}
}

// TestPebbleCheckpointBelowStart: a pebble store's checkpoint is older
// than the changelog's log start (records after it were deleted): the
// tail it would restore is gone. Under fail the restore names the loss
// and leaves the local state as it was; under start_empty it wipes the
// store and starts from what the changelog still holds.
func TestPebbleCheckpointBelowStart(t *testing.T) {
	c := newCluster(t)
	brokers := c.ListenAddrs()
	top := windowTopology(t, brokers)
	dir := t.TempDir()
	gn := gen.New(9)
	producePhase(t, brokers, gn, 3000)
	a := start(t, top, "a", WithStoreBuilder(changelog.PebbleBuilder(dir)))
	drain(t, a, 3000)
	a.stop(t)
	producePhase(t, brokers, gn, 3000)
	m := start(t, top, "m") // memory: the changelog grows past a's checkpoints
	drain(t, m, 3000)
	m.stop(t)

	q := restorer(t, top, brokers)
	ctx := context.Background()
	clTopic := top.Routes[0].Window.ChangelogTopic
	ends, err := q.adm.ListEndOffsets(ctx, clTopic)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	ends.Each(func(o kadm.ListedOffset) {
		pb, err := changelog.OpenPebble(filepath.Join(dir, clTopic, fmt.Sprint(o.Partition)))
		if err != nil {
			t.Fatal(err)
		}
		defer pb.Close()
		off, ok := pb.Checkpoint()
		if !ok || off >= o.Offset-1 || pb.Len() == 0 {
			return // a's store of this partition saw nothing m did not overwrite
		}
		checked++
		before := dumpAll(t, pb)
		del := kadm.Offsets{}
		del.Add(kadm.Offset{Topic: clTopic, Partition: o.Partition, At: o.Offset})
		if resp, err := q.adm.DeleteRecords(ctx, del); err != nil || resp.Error() != nil {
			t.Fatalf("delete records: %v %v", err, resp.Error())
		}
		q.top.Settings.State.OnChangelogLoss = config.ChangelogLossFail
		var le *stagetwo.ChangelogLossError
		if _, _, err := q.restore(context.Background(), "errors", clTopic, o.Partition, pb); !errors.As(err, &le) || le.Reason != wire.LossCheckpointBelowStart {
			t.Fatalf("partition %d: checkpoint %d below log start %d under fail: %v", o.Partition, off, o.Offset, err)
		}
		if !maps.Equal(dumpAll(t, pb), before) {
			t.Fatalf("partition %d: a failed restore changed the local state", o.Partition)
		}
		q.top.Settings.State.OnChangelogLoss = config.ChangelogLossStartEmpty
		n, _, err := q.restore(context.Background(), "errors", clTopic, o.Partition, pb)
		q.top.Settings.State.OnChangelogLoss = ""
		if err != nil || n != 0 || pb.Len() != 0 {
			t.Fatalf("partition %d: start_empty over a checkpoint below log start: %d records, %d entries left, %v", o.Partition, n, pb.Len(), err)
		}
		if testutil.ToFloat64(q.m.StateWipes.WithLabelValues("errors", "below_start")) == 0 ||
			testutil.ToFloat64(q.m.ChangelogLoss.WithLabelValues("errors", wire.LossCheckpointBelowStart, "start_empty")) == 0 {
			t.Fatalf("partition %d: the wipe or the accepted loss was not counted", o.Partition)
		}
	})
	if checked == 0 {
		t.Fatal("no partition's checkpoint fell behind the changelog: nothing was tested")
	}
}
