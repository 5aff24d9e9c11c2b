package stateful

import (
	"math"
	"slices"
	"strconv"
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
// live is fields with event times moving on: each pass over the records
// shifts their event time and source maximum past the windows of the pass
// before (rewritten in place, no allocation), so the records are late as
// often as the generator makes them, not all late after the first pass as
// they are in fields and json. aligned is live with the source maximum
// stage one stamps under aligned watermarks (the default; the records
// come from one input partition), so the operator judges each record by
// its source (ProcessAligned). Kafka is not involved; the operator runs
// over the Memory store in batches of 1,000 records, as
// ProcessRepartition runs a polled batch (the watermark and source
// progress written once at its end), each followed by a commit's reset
// of the changes.
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
		for _, mode := range []string{"fields", "json", "live", "aligned"} {
			recs := reps
			var sh *shifter
			switch mode {
			case "json":
				recs = withoutFields(reps)
			case "live":
				recs, sh = newShifter(b, reps)
			case "aligned":
				recs, sh = newShifter(b, withSourceMax(b, reps))
			}
			b.Run(v.name+"/"+mode, func(b *testing.B) {
				t := benchWindowTask(b, top)
				t.beginBatch()
				tally := metrics.NewTally()
				loop(b, func(i int) {
					if sh != nil && i%len(recs) == 0 {
						sh.pass(i / len(recs))
					}
					if _, err := e.processWindow(recs[i%len(recs)], t, tally); err != nil {
						b.Fatal(err)
					}
					if i%1000 == 999 {
						if err := t.flush(false); err != nil {
							b.Fatal(err)
						}
						t.st.(*changelog.Memory).ResetChanges()
						t.beginBatch()
					}
				})
				name := top.Routes[3].Name
				if tally.Aggregated[name] == 0 {
					b.Fatalf("nothing aggregated: %+v", tally.Dirty)
				}
				b.ReportMetric(float64(tally.Late[name])/float64(tally.Late[name]+tally.Aggregated[name]), "late/record")
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

// shifter rewrites the event time and source maximum headers of copies
// of records in place, by a whole number of passes.
type shifter struct {
	recs []*kgo.Record
	et   []int64 // by record: its event time
	max  []int64 // by record: its source maximum, MinInt64 when empty
	span int64   // one pass's shift: more than its event times span, window and grace
}

func newShifter(b testing.TB, reps []*kgo.Record) ([]*kgo.Record, *shifter) {
	sh := &shifter{span: 60_000}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range reps {
		c := *r
		c.Headers = slices.Clone(r.Headers)
		et, mx := int64(0), int64(math.MinInt64)
		for j, h := range c.Headers {
			switch h.Key {
			case wire.HeaderEventTime, wire.HeaderSourceMax:
				if len(h.Value) == 0 {
					continue
				}
				n, err := strconv.ParseInt(string(h.Value), 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				if h.Key == wire.HeaderEventTime {
					et = n
				} else {
					mx = n
				}
				c.Headers[j].Value = make([]byte, len(h.Value), 24)
				copy(c.Headers[j].Value, h.Value)
			}
		}
		lo, hi = min(lo, et), max(hi, et)
		sh.recs, sh.et, sh.max = append(sh.recs, &c), append(sh.et, et), append(sh.max, mx)
	}
	sh.span += hi - lo
	return sh.recs, sh
}

func (sh *shifter) pass(n int) {
	d := int64(n) * sh.span
	for i, r := range sh.recs {
		for j, h := range r.Headers {
			switch {
			case h.Key == wire.HeaderEventTime:
				r.Headers[j].Value = strconv.AppendInt(h.Value[:0], sh.et[i]+d, 10)
			case h.Key == wire.HeaderSourceMax && sh.max[i] != math.MinInt64:
				r.Headers[j].Value = strconv.AppendInt(h.Value[:0], sh.max[i]+d, 10)
			}
		}
	}
}

// withSourceMax are copies of records of one source with the source
// maximum header stage one stamps (sources.go): the largest event time
// before each, none for the first.
func withSourceMax(b testing.TB, recs []*kgo.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	before := int64(math.MinInt64)
	for i, r := range recs {
		c := *r
		var v []byte
		if before != math.MinInt64 {
			v = []byte(strconv.FormatInt(before, 10))
		}
		c.Headers = append([]kgo.RecordHeader{{Key: wire.HeaderSourceMax, Value: v}}, r.Headers...)
		et, ok := wire.Int(r.Headers, wire.HeaderEventTime)
		if !ok {
			b.Fatal("no event time")
		}
		before = max(before, et)
		out[i] = &c
	}
	return out
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
