package assembly

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/changelog/storetest"
)

// The seed-002 part values after the example's projections (~60 and ~70
// bytes).
var (
	benchX = []byte(`{"order_id":"o-123456","items":3,"total":1234.5}`)
	benchY = []byte(`{"order_id":"o-123456","customer":"customer-812","country":"DE"}`)
)

// BenchmarkProcess: one part through the operator over the Memory store;
// orders of two parts arrive interleaved with up to 64 open at a time,
// with a commit (ResetChanges) every 1,000 parts.
func BenchmarkProcess(b *testing.B) {
	for _, retention := range []time.Duration{0, time.Hour} {
		b.Run(fmt.Sprint("retention=", retention), func(b *testing.B) {
			st := changelog.NewMemory()
			o, err := New(Spec{Parts: []string{"x", "y"}, TTL: time.Minute, Retention: retention}, st)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				order := i / 2
				id := "o-" + strconv.Itoa(order/64*64+(order%64)) // interleave 64 orders
				part, v := "x", benchX
				if i%2 == 1 {
					part, v = "y", benchY
				}
				if _, err := o.Process(id, part, int64(i), v); err != nil {
					b.Fatal(err)
				}
				if i%1000 == 0 {
					st.ResetChanges()
				}
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "parts/s")
		})
	}
}

// BenchmarkOpenAssemblyMemory: 100,000 open assemblies holding one
// projected part each (the X part, 50 bytes), as logical store bytes and
// as Go heap bytes of the Memory store, per open assembly.
func BenchmarkOpenAssemblyMemory(b *testing.B) {
	const n = 100_000
	storetest.BenchOpenState(b, n, "assembly", func(st *changelog.Memory) (int, error) {
		o, err := New(Spec{Parts: []string{"x", "y"}, TTL: time.Hour}, st)
		if err != nil {
			return 0, err
		}
		for i := range n {
			if _, err := o.Process("o-"+strconv.Itoa(i), "x", int64(i), benchX); err != nil {
				return 0, err
			}
		}
		return o.Open(), nil
	})
}
