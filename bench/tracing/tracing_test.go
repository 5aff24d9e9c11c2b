// Package tracingbench is the cost of tracing on W1's stage one (tests
// only): the router's per-record path with spans off against spans on at
// a 1% sample, every input carrying a traceparent (docs/tracing.md). The
// figures go to docs/benchmarks.md ("Tracing"); run on a quiet machine:
//
//	cd bench && go test ./tracing -run '^$' -bench Tracing -benchmem -count 10
//
// Each op is one input record through stage one as the runtime runs it
// (processInputPartition: Start, the engine, End); spans at 1% go to the
// router's batch processor (tracing.NewProvider, as tracing.New builds
// it) over an exporter that drops them, so the export over the network is
// not in the figure. sampled/op is the share that got a span.
package tracingbench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
	"github.com/sidestream/sidestream/internal/tracing"
	"github.com/sidestream/sidestream/internal/wire"
)

// w1Records are generated events (the demo's mix, as the throughput
// harness writes them) on W1's input, each with a traceparent of its own.
func w1Records(b *testing.B) []*kgo.Record {
	g := gen.New(1)
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]*kgo.Record, 4096)
	size := 0
	for i := range recs {
		var tc wire.TraceContext
		binary.BigEndian.PutUint64(tc.TraceID[:8], rng.Uint64())
		binary.BigEndian.PutUint64(tc.TraceID[8:], rng.Uint64())
		binary.BigEndian.PutUint64(tc.SpanID[:], rng.Uint64()|1)
		tc.Flags = 1
		recs[i] = &kgo.Record{Topic: "logs", Partition: int32(i % 6), Offset: int64(i), Key: []byte("e-" + strconv.Itoa(i)),
			Value: g.Next().Value, Timestamp: time.UnixMilli(1_790_000_000_000),
			Headers: []kgo.RecordHeader{{Key: wire.HeaderTraceparent, Value: wire.AppendTraceparent(nil, tc)}}}
		size += len(recs[i].Value)
	}
	b.SetBytes(int64(size / len(recs)))
	return recs
}

// BenchmarkTracingW1: spans off (the default) and at a 1% sample.
func BenchmarkTracingW1(b *testing.B) {
	top := stageonetest.ExampleAt(b, "../topologies/w1.yaml", []string{"127.0.0.1:9092"})
	for _, ratio := range []float64{0, 0.01} {
		name := "off"
		if ratio > 0 {
			name = fmt.Sprintf("sample-%g%%", ratio*100)
		}
		b.Run(name, func(b *testing.B) {
			var tr *tracing.Tracer
			if ratio > 0 {
				tp := tracing.NewProvider(tracetest.NewNoopExporter())
				b.Cleanup(func() { _ = tp.Shutdown(b.Context()) })
				tr = tracing.NewWithProvider(tp, top, ratio)
			}
			eng := stageone.New(top)
			recs := w1Records(b)
			tally := metrics.NewTally()
			sampled := 0
			stageonetest.Loop(b, func(i int) {
				r := recs[i%len(recs)]
				var span tracing.Pending
				if tr != nil {
					span = tr.Start(r)
				}
				outs := eng.Process(r, tally)
				if span.Sampled() {
					sampled++
					tr.End(span, r, outs)
				}
			})
			// The share sampled: the ratio, within the 4096 records' luck.
			b.ReportMetric(float64(sampled)/float64(b.N), "sampled/op")
		})
	}
}
