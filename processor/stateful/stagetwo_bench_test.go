package stateful

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/changelog"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/processor/window"
	"github.com/sidestream/sidestream/topology"
	"github.com/sidestream/sidestream/wire"
)

// BenchmarkWindowStageTwo: stage two of a window route per repartitioned
// record, on the W2 workload (bench/topologies/w2.yaml: ~300-byte
// generator log events, a count per service in 10 s tumbling windows),
// and on W2 with aggregates that read two fields (sum and max of
// latency_ms). The records are stage one's own outputs; fields reads the
// fields stage one carried (wire.HeaderFields), json the same records
// without that header (the path of records an older version wrote: the
// value decoded again). stage-one is stage one of the same input record
// (every route, the repartitioned record and its headers included).
// Kafka is not involved; the operator runs over the Memory store with the
// changelog records of a commit every 1,000 records.
func BenchmarkWindowStageTwo(b *testing.B) {
	for _, v := range []struct {
		name string
		aggs []topology.Aggregate
	}{
		{"w2", nil},
		{"w2-sum", []topology.Aggregate{{Name: "count", Fn: "count"}, {Name: "latency", Fn: "sum", Of: "latency_ms"}, {Name: "slowest", Fn: "max", Of: "latency_ms"}}},
	} {
		cfg, err := topology.LoadFile("../../bench/topologies/w2.yaml")
		if err != nil {
			b.Fatal(err)
		}
		if v.aggs != nil {
			cfg.Routes[3].Window.Aggregates = v.aggs
		}
		top, err := topology.Compile(cfg, "../../bench/topologies/")
		if err != nil {
			b.Fatal(err)
		}
		e := newEngine(top)
		inputs, reps := stageTwoInputs(b, e, top)
		b.Run(v.name+"/stage-one", func(b *testing.B) {
			tally := metrics.NewTally()
			loop(b, func(i int) { e.Process(inputs[i%len(inputs)], tally) })
		})
		for _, mode := range []string{"fields", "json"} {
			recs := reps
			if mode == "json" {
				recs = withoutFields(reps)
			}
			b.Run(v.name+"/"+mode, func(b *testing.B) {
				t := benchWindowTask(b, top)
				tally := metrics.NewTally()
				loop(b, func(i int) {
					if _, err := e.processWindow(recs[i%len(recs)], t, tally); err != nil {
						b.Fatal(err)
					}
					if i%1000 == 999 {
						t.st.(*changelog.Memory).ResetChanges()
					}
				})
				if tally.Aggregated[top.Routes[3].Name] == 0 {
					b.Fatalf("nothing aggregated: %+v", tally.Dirty)
				}
				// What a repartitioned record weighs, and its fields
				// header (key, value and their two length varints).
				var size, fields int
				for _, r := range recs {
					size += len(r.Key) + len(r.Value)
					for _, h := range r.Headers {
						size += len(h.Key) + len(h.Value) + 2
						if h.Key == wire.HeaderFields {
							fields += len(h.Key) + len(h.Value) + 2
						}
					}
				}
				b.ReportMetric(float64(size)/float64(len(recs)), "record-B")
				b.ReportMetric(float64(fields)/float64(len(recs)), "fields-B")
			})
		}
	}
}

// stageTwoInputs are generator events as input records and what stage
// one writes of them to the window's repartition topic.
func stageTwoInputs(b testing.TB, e *engine, top *topology.Topology) (inputs, reps []*kgo.Record) {
	g := gen.New(1)
	g.BadFraction = 0
	tally := metrics.NewTally()
	rep := top.Routes[3].Window.RepartitionTopic
	for range 4096 {
		ev := g.Next()
		in := &kgo.Record{Topic: "logs", Key: ev.Key, Value: ev.Value, Timestamp: time.UnixMilli(g.Base)}
		inputs = append(inputs, in)
		for _, out := range e.Process(in, tally) {
			if out.Topic == rep {
				reps = append(reps, out)
			}
		}
	}
	if len(reps) == 0 {
		b.Fatal("stage one wrote nothing to the repartition topic")
	}
	return inputs, reps
}

func withoutFields(recs []*kgo.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		c := *r
		c.Headers = nil
		for _, h := range r.Headers {
			if h.Key != wire.HeaderFields {
				c.Headers = append(c.Headers, h)
			}
		}
		out[i] = &c
	}
	return out
}

func benchWindowTask(b testing.TB, top *topology.Topology) *windowTask {
	ws, err := newWindowStage(top, nil)
	if err != nil {
		b.Fatal(err)
	}
	wr := ws.routes[top.Routes[3].Window.RepartitionTopic]
	st := changelog.NewMemory()
	op, err := window.New(wr.spec, st)
	if err != nil {
		b.Fatal(err)
	}
	return &windowTask{route: wr, st: st, op: op, lastHeard: map[string]time.Time{}}
}
