package stagetwo

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestWindowBatchMatchesPerRecord: stage two over batches of random size
// (processWindowBatch between BeginBatch and flush, as ProcessRepartition
// and the direct runner run them) gives the outputs, tallies, store and
// changelog changes of the same records with every write made per record,
// on the W2 workload with source maxima, marks and late records, and with
// a commit (the changes reset) after random batches.
func TestWindowBatchMatchesPerRecord(t *testing.T) {
	top := w2Topology(t, nil)
	e := newEngine(top)
	_, reps := stageTwoInputs(t, e, top)
	recs := withMarks(withSourceMax(t, reps[:1500]), reps[0].Topic)
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 7))
		ref, bat := benchWindowTask(t, top), benchWindowTask(t, top)
		refTally, batTally := metrics.NewTally(), metrics.NewTally()
		for i := 0; i < len(recs); {
			n := min(len(recs)-i, 1+rng.IntN(300))
			batch := recs[i : i+n]
			i += n
			var want, got []*kgo.Record
			refStart := time.Now()
			for _, r := range batch {
				outs, err := e.processRepartitioned(r, ref, refTally)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, outs...)
			}
			heardBefore := maps.Clone(bat.lastHeard)
			start := time.Now()
			bat.beginBatch()
			if err := e.processWindowBatch(bat, batch, batTally, func(r *kgo.Record) { got = append(got, r) }); err != nil {
				t.Fatal(err)
			}
			if err := bat.flush(false); err != nil {
				t.Fatal(err)
			}
			checkHeard(t, ref.lastHeard, refStart, heardBefore, bat.lastHeard, start, time.Now())
			if !reflect.DeepEqual(want, got) || !reflect.DeepEqual(refTally, batTally) {
				t.Fatalf("seed %d, batch ending at %d: outputs or tallies differ", seed, i)
			}
			w, g := storeChanges(ref.st), storeChanges(bat.st)
			if !reflect.DeepEqual(w, g) || ref.st.Len() != bat.st.Len() || ref.st.SizeBytes() != bat.st.SizeBytes() {
				t.Fatalf("seed %d, batch ending at %d: changes\n%v\nwant\n%v", seed, i, g, w)
			}
			if !reflect.DeepEqual(storeEntries(t, ref.st), storeEntries(t, bat.st)) {
				t.Fatalf("seed %d, batch ending at %d: stores differ", seed, i)
			}
			if rng.IntN(2) == 0 {
				ref.st.ResetChanges()
				bat.st.ResetChanges()
			}
		}
		if refTally.Late[top.Routes[3].Name] == 0 || refTally.MarksRead == 0 {
			t.Fatalf("seed %d: no late record (%d) or no mark (%d) exercised", seed, refTally.Late[top.Routes[3].Name], refTally.MarksRead)
		}
	}
}

// withMarks puts a mark of a second source among recs every 50 records,
// its maximum moving on with the records' event times.
func withMarks(recs []*kgo.Record, topic string) []*kgo.Record {
	var out []*kgo.Record
	for i, r := range recs {
		out = append(out, r)
		if i%50 == 49 {
			et, _ := wire.Int(r.Headers, wire.HeaderEventTime)
			out = append(out, &kgo.Record{Topic: topic, Headers: []kgo.RecordHeader{
				{Key: wire.HeaderMark, Value: []byte("1")},
				{Key: wire.HeaderTopic, Value: []byte("logs")},
				{Key: wire.HeaderPartition, Value: []byte("1")},
				{Key: wire.HeaderSourceMax, Value: []byte(strconv.FormatInt(et-int64(i%7), 10))},
			}})
		}
	}
	return out
}

func storeChanges(st changelog.Store) [][2]string {
	var out [][2]string
	for _, c := range st.Changes() {
		v := "<tombstone>"
		if !c.Tombstone() {
			v = string(c.Value)
		}
		out = append(out, [2]string{string(c.Key), v})
	}
	return out
}

func storeEntries(t *testing.T, st changelog.Store) [][2]string {
	var out [][2]string
	if err := st.Range(nil, func(k, v []byte) bool {
		out = append(out, [2]string{string(k), string(v)})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkHeard: the batch stamped the sources the per-record path heard in
// its batch (those stamped since refStart), each once with a time within
// the batch [start, end], and left the others as they were.
func checkHeard(t *testing.T, ref map[string]time.Time, refStart time.Time, before, got map[string]time.Time, start, end time.Time) {
	t.Helper()
	if len(ref) != len(got) {
		t.Fatalf("heard %d sources, want %d", len(got), len(ref))
	}
	for src, at := range got {
		r, ok := ref[src]
		if !ok {
			t.Fatalf("heard %s, the per-record path did not", src)
		}
		if !r.Before(refStart) {
			if at.Before(start) || at.After(end) {
				t.Fatalf("source %s heard in the batch stamped %v, outside [%v, %v]", src, at, start, end)
			}
		} else if !at.Equal(before[src]) {
			t.Fatalf("source %s not heard in the batch: stamp moved from %v to %v", src, before[src], at)
		}
	}
}
