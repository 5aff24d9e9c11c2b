package stagetwo

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/plan"
)

// BenchmarkAssemblyPipeline: the seed-002 example per input record, on
// gen.OrderParts input. routing-only is the example without its assembly
// route (decode, two routes with projections); assembly adds stage one
// (the part's id and repartition record) and stage two (the operator over
// the Memory store, the assembled/incomplete/duplicate records, the
// changelog records of a commit every 1,000 records). Kafka is not
// involved: the end-to-end cost of the repartition round trip is in
// docs/benchmarks.md.
func BenchmarkAssemblyPipeline(b *testing.B) {
	parts, _ := gen.OrderParts(1, 4096, 6)
	recs := make([]*kgo.Record, len(parts))
	for i, p := range parts {
		recs[i] = &kgo.Record{Topic: "order-parts", Key: p.Key, Value: p.Value, Timestamp: time.UnixMilli(p.TS)}
	}
	withAssembly := exampleAt(b, "../../examples/assemble-orders.yaml", []string{"127.0.0.1:9092"})
	cfg, err := config.LoadFile("../../examples/assemble-orders.yaml")
	if err != nil {
		b.Fatal(err)
	}
	cfg.Routes = cfg.Routes[:2] // lines and customer
	routingOnly, err := plan.Compile(cfg, "../../examples/")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("routing-only", func(b *testing.B) {
		e := newEngine(routingOnly)
		tally := metrics.NewTally()
		loop(b, func(i int) { e.Process(recs[i%len(recs)], tally) })
	})
	b.Run("assembly", func(b *testing.B) {
		e := newEngine(withAssembly)
		as, err := newAssemblyStage(withAssembly)
		if err != nil {
			b.Fatal(err)
		}
		ar := as.routes[withAssembly.Assemblies()[0].Assembly.RepartitionTopic]
		st := changelog.NewMemory()
		op, err := assembly.New(ar.spec, st)
		if err != nil {
			b.Fatal(err)
		}
		t := &assemblyTask{route: ar, st: st, op: op}
		if _, err := as.GetOrBuild(ar.rt.Assembly.RepartitionTopic, 0, func() (*assemblyTask, error) { return t, nil }, func(*assemblyTask) {}); err != nil {
			b.Fatal(err)
		}
		tally := metrics.NewTally()
		now := time.Now()
		// The input repeats every len(recs) records: shift the ids and
		// times of each lap so every lap opens new assemblies.
		laps := 0
		loop(b, func(i int) {
			if i > 0 && i%len(recs) == 0 {
				laps++
			}
			r := *recs[i%len(recs)]
			for _, out := range e.Process(&r, tally) {
				if out.Topic != ar.rt.Assembly.RepartitionTopic {
					continue
				}
				out.Key = append(out.Key, byte('a'+laps%26), byte('a'+laps/26%26))
				setEventTime(b, out.Headers, parts[i%len(parts)].TS+int64(laps)*1_000_000)
				if _, err := e.processAssembly(out, t, now, tally); err != nil {
					b.Fatal(err)
				}
			}
			if i%1000 == 999 {
				as.ChangelogRecords(tally)
			}
		})
		b.ReportMetric(float64(t.op.Open()), "open")
	})
}
