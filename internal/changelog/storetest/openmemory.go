package storetest

import (
	"runtime"
	"testing"

	"github.com/sidestream/sidestream/internal/changelog"
)

// BenchOpenState measures the memory one open unit of state (a window, an
// assembly) costs: fill opens n units over a fresh Memory store and
// returns how many are open; the benchmark reports the store's bytes, the
// Go heap and the keys per unit, as store-B/<unit>, heap-B/<unit> and
// keys/<unit>. The window and assembly operators' benchmarks share it.
func BenchOpenState(b *testing.B, n int, unit string, fill func(st *changelog.Memory) (open int, err error)) {
	b.Helper()
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		st := changelog.NewMemory()
		open, err := fill(st)
		if err != nil {
			b.Fatal(err)
		}
		st.ResetChanges()
		runtime.GC()
		runtime.ReadMemStats(&after)
		if open != n {
			b.Fatalf("%d %ss open, want %d", open, unit, n)
		}
		b.ReportMetric(float64(st.SizeBytes())/float64(n), "store-B/"+unit)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-B/"+unit)
		b.ReportMetric(float64(st.Len())/float64(n), "keys/"+unit)
		runtime.KeepAlive(st)
	}
}
