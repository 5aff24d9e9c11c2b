package stagetwo

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/window"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// BenchmarkWindowStageTwo: stage two of a window route per repartitioned
// record, on the W2 workload (bench/topologies/w2.yaml: ~300-byte
// generator log events, a count per service in 10 s tumbling windows),
// and on W2 with aggregates that read two fields (sum and max of
// latency_ms). The records are stage one's own outputs; fields reads the
// fields stage one carried (in its envelope, wire.HeaderRepartition), json
// the same records without them (the path of records an older version wrote: the
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
		aggs []config.Aggregate
	}{
		{"w2", nil},
		{"w2-sum", []config.Aggregate{{Name: "count", Fn: "count"}, {Name: "latency", Fn: "sum", Of: "latency_ms"}, {Name: "slowest", Fn: "max", Of: "latency_ms"}}},
	} {
		top := w2Topology(b, v.aggs)
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
				recs = withoutFields(b, reps)
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
				// What a repartitioned record weighs, and its headers
				// (key, value and their two length varints).
				var size, headers int
				for _, r := range recs {
					size += len(r.Key) + len(r.Value)
					for _, h := range r.Headers {
						headers += len(h.Key) + len(h.Value) + 2
					}
				}
				b.ReportMetric(float64(size+headers)/float64(len(recs)), "record-B")
				b.ReportMetric(float64(headers)/float64(len(recs)), "headers-B")
			})
		}
	}
}

// stageTwoInputs are generator events as input records and what stage
// one writes of them to the window's repartition topic.
func stageTwoInputs(b testing.TB, e *recordRunner, top *plan.Plan) (inputs, reps []*kgo.Record) {
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

// envelopeOf is the index of r's repartition envelope and what it holds,
// its slices copies (the value may be rewritten in place).
func envelopeOf(b testing.TB, r *kgo.Record) (int, wire.Envelope) {
	for j, h := range r.Headers {
		if h.Key != wire.HeaderRepartition {
			continue
		}
		env, err := wire.ParseEnvelope(h.Value)
		if err != nil {
			b.Fatal(err)
		}
		env.Topic, env.Key, env.Fields = slices.Clone(env.Topic), slices.Clone(env.Key), slices.Clone(env.Fields)
		return j, env
	}
	b.Fatal("no repartition envelope")
	return 0, wire.Envelope{}
}

// setEventTime rewrites the event time of the envelope among hs, in
// place (its value newly allocated, as a header stage one wrote).
func setEventTime(b testing.TB, hs []kgo.RecordHeader, et int64) {
	for k, h := range hs {
		if h.Key != wire.HeaderRepartition {
			continue
		}
		env, err := wire.ParseEnvelope(h.Value)
		if err != nil {
			b.Fatal(err)
		}
		env.EventTime = et
		hs[k].Value = wire.AppendEnvelope(make([]byte, 0, len(h.Value)+10), &env)
		return
	}
	b.Fatal("no repartition envelope")
}

// withEnvelope is a copy of r with its envelope rewritten by f.
func withEnvelope(b testing.TB, r *kgo.Record, f func(*wire.Envelope)) *kgo.Record {
	j, env := envelopeOf(b, r)
	f(&env)
	c := *r
	c.Headers = slices.Clone(r.Headers)
	c.Headers[j].Value = wire.AppendEnvelope(nil, &env)
	return &c
}

// shifter rewrites the event time and source maximum of copies of
// records in place (their envelopes), by a whole number of passes.
type shifter struct {
	recs []*kgo.Record
	at   []int           // by record: its envelope's index
	env  []wire.Envelope // by record: its envelope as stage one wrote it
	span int64           // one pass's shift: more than its event times span, window and grace
}

func newShifter(b testing.TB, reps []*kgo.Record) ([]*kgo.Record, *shifter) {
	sh := &shifter{span: 60_000}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, r := range reps {
		c := *r
		c.Headers = slices.Clone(r.Headers)
		j, env := envelopeOf(b, r)
		// Room for the longer varints of shifted times.
		c.Headers[j].Value = append(make([]byte, 0, len(r.Headers[j].Value)+24), r.Headers[j].Value...)
		lo, hi = min(lo, env.EventTime), max(hi, env.EventTime)
		sh.recs, sh.at, sh.env = append(sh.recs, &c), append(sh.at, j), append(sh.env, env)
	}
	sh.span += hi - lo
	return sh.recs, sh
}

func (sh *shifter) pass(n int) {
	d := int64(n) * sh.span
	for i, r := range sh.recs {
		env := sh.env[i]
		env.EventTime += d
		if env.Aligned && env.SourceMax != math.MinInt64 {
			env.SourceMax += d
		}
		h := &r.Headers[sh.at[i]]
		h.Value = wire.AppendEnvelope(h.Value[:0], &env)
	}
}

// withSourceMax are copies of records of one source with the source
// maximum stage one stamps (sources.go): the largest event time before
// each, none for the first.
func withSourceMax(b testing.TB, recs []*kgo.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	before := int64(math.MinInt64)
	for i, r := range recs {
		out[i] = withEnvelope(b, r, func(env *wire.Envelope) {
			env.Aligned, env.SourceMax = true, before
			before = max(before, env.EventTime)
		})
	}
	return out
}

// withoutFields are copies of records without the fields stage one
// carried (as an older version wrote them).
func withoutFields(b testing.TB, recs []*kgo.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		out[i] = withEnvelope(b, r, func(env *wire.Envelope) { env.Fields, env.HasFields = nil, false })
	}
	return out
}

func benchWindowTask(b testing.TB, top *plan.Plan) *windowTask {
	ws, err := newWindowStage(top, nil, 1)
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

// w2Topology is the W2 bench workload (bench/topologies/w2.yaml) compiled,
// its window route's aggregates replaced by aggs unless nil.
func w2Topology(tb testing.TB, aggs []config.Aggregate) *plan.Plan {
	tb.Helper()
	cfg, err := config.LoadFile("../../bench/topologies/w2.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	if aggs != nil {
		cfg.Routes[3].Window.Aggregates = aggs
	}
	top, err := plan.Compile(cfg, "../../bench/topologies/")
	if err != nil {
		tb.Fatal(err)
	}
	return top
}
