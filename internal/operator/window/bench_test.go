package window

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/changelog/storetest"
)

var benchAggs = []Aggregation{{"orders", Count}, {"amount", Sum}, {"max", Max}}

func benchSpecs() map[string]Spec {
	base := Spec{MaxOutOfOrderness: 5 * time.Second, Grace: time.Minute, Aggregations: benchAggs}
	tum, hop, ses := base, base, base
	tum.Kind, tum.Size = Tumbling, time.Minute
	hop.Kind, hop.Size, hop.Advance = Hopping, time.Minute, 10*time.Second
	ses.Kind, ses.Gap = Session, 30*time.Second
	return map[string]Spec{"tumbling": tum, "hopping": hop, "session": ses}
}

// BenchmarkProcess: 1,000 keys of which 100 are active at a time (the
// active set rotates every 10,000 records, so sessions end), event time
// +10 ms per record with up to 2 s of jitter (so windows fire, take late
// updates and are purged), a commit (Changes + ResetChanges) every 1,000
// records.
func BenchmarkProcess(b *testing.B) {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	// tumbling-float: the same as tumbling, with float amounts, which
	// sums keep exact (exactsum.go).
	for _, name := range []string{"tumbling", "tumbling-float", "hopping", "session"} {
		for _, mode := range []EmitMode{EmitUpdate, EmitFinal} {
			b.Run(name+"/"+mode.String(), func(b *testing.B) {
				s := benchSpecs()[strings.TrimSuffix(name, "-float")]
				floats := strings.HasSuffix(name, "-float")
				s.Emit = mode
				st := changelog.NewMemory()
				o, err := New(s, st)
				if err != nil {
					b.Fatal(err)
				}
				vals := []any{1, 0, 0}
				var emitted int
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					t := int64(i)*10 - int64((i*7919)%200)*10
					vals[1], vals[2] = i%100, i%37
					if floats {
						vals[1] = float64(i%100) * 0.1
					}
					out, err := o.Process(keys[(i/10000*37+i%100)%len(keys)], t, vals)
					if err != nil {
						b.Fatal(err)
					}
					emitted += len(out.Results)
					if i%1000 == 999 {
						_ = st.Changes()
						st.ResetChanges()
					}
					i++
				}
				b.ReportMetric(float64(emitted)/float64(i), "results/record")
				b.ReportMetric(float64(o.OpenWindows()), "open-windows")
			})
		}
	}
}

// BenchmarkOpenWindowMemory measures the state of open windows: 100,000
// keys with one open tumbling window each (3 aggregations), as logical
// store bytes and as Go heap bytes of the Memory store, per window.
func BenchmarkOpenWindowMemory(b *testing.B) {
	const n = 100_000
	storetest.BenchOpenState(b, n, "window", func(st *changelog.Memory) (int, error) {
		s := benchSpecs()["tumbling"]
		s.Grace = time.Hour
		o, err := New(s, st)
		if err != nil {
			return 0, err
		}
		for i := range n {
			if _, err := o.Process("user-"+strconv.Itoa(i), int64(i%50000), []any{1, i, i}); err != nil {
				return 0, err
			}
		}
		return o.OpenWindows(), nil
	})
}

// BenchmarkProcessStore runs BenchmarkProcess's tumbling/update stream
// over each store: Memory, and Pebble on disk with its commit (one synced
// batch with the checkpoint) every 1,000 records, as after a transaction.
func BenchmarkProcessStore(b *testing.B) {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	for _, store := range []string{"memory", "pebble"} {
		b.Run(store, func(b *testing.B) {
			var st changelog.Store = changelog.NewMemory()
			if store == "pebble" {
				pb, err := changelog.OpenPebble(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				st = pb
			}
			defer st.Close()
			o, err := New(benchSpecs()["tumbling"], st)
			if err != nil {
				b.Fatal(err)
			}
			vals := []any{1, 0, 0}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				t := int64(i)*10 - int64((i*7919)%200)*10
				vals[1], vals[2] = i%100, i%37
				if _, err := o.Process(keys[(i/10000*37+i%100)%len(keys)], t, vals); err != nil {
					b.Fatal(err)
				}
				if i%1000 == 999 {
					_ = st.Changes()
					st.ResetChanges()
					if ck, ok := st.(changelog.Checkpointer); ok {
						if err := ck.Commit(int64(i), time.UnixMilli(int64(i))); err != nil {
							b.Fatal(err)
						}
					}
				}
				i++
			}
		})
	}
}
