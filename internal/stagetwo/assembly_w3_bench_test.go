package stagetwo

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/wire"
)

// BenchmarkAssemblyStageTwoW3: stage two of workload W3's assembly
// (bench/topologies/w3.yaml: the error and warn records of one user_id,
// event-time TTL 10 s, most assemblies ending incomplete) per part, on
// the parts stage one writes for gen's log events: processAssembly over
// the Memory store, the incomplete and assembled records, the changelog
// records of a commit every 1,000 parts. Stage one runs outside the timed
// loop; Kafka is not involved.
func BenchmarkAssemblyStageTwoW3(b *testing.B) {
	top := exampleAt(b, "../../bench/topologies/w3.yaml", []string{"127.0.0.1:9092"})
	e := newEngine(top)
	as, err := newAssemblyStage(top)
	if err != nil {
		b.Fatal(err)
	}
	ar := as.routes[top.Assemblies()[0].Assembly.RepartitionTopic]
	g := gen.New(1)
	g.BadFraction = 0
	var parts []*kgo.Record
	var first, last int64
	tally := metrics.NewTally()
	for len(parts) < 20_000 {
		ev := g.Next()
		for _, out := range e.Process(&kgo.Record{Topic: "logs", Key: ev.Key, Value: ev.Value, Timestamp: time.UnixMilli(ev.TS)}, tally) {
			if out.Topic == ar.rt.Assembly.RepartitionTopic {
				parts = append(parts, out)
			}
		}
		if first == 0 {
			first = ev.TS
		}
		last = ev.TS
	}
	st := changelog.NewMemory()
	op, err := assembly.New(ar.spec, st)
	if err != nil {
		b.Fatal(err)
	}
	t := &assemblyTask{route: ar, st: st, op: op}
	if _, err := as.GetOrBuild(ar.rt.Assembly.RepartitionTopic, 0, func() (*assemblyTask, error) { return t, nil }, func(*assemblyTask) {}); err != nil {
		b.Fatal(err)
	}
	// Each lap moves the event times past the last lap's, so the clock
	// keeps advancing and every lap's assemblies open anew.
	span := last - first + 20_000
	times := make([]int64, len(parts))
	for i, p := range parts {
		times[i] = wire.ReadRepartition(p.Headers).EventTime
	}
	now := time.Now()
	emitted := 0
	loop(b, func(i int) {
		lap := int64(i / len(parts))
		r := *parts[i%len(parts)]
		r.Headers = append([]kgo.RecordHeader(nil), r.Headers...)
		setEventTime(b, r.Headers, times[i%len(parts)]+lap*span)
		recs, err := e.processAssembly(&r, t, now, tally)
		if err != nil {
			b.Fatal(err)
		}
		emitted += len(recs)
		if i%1000 == 999 {
			as.ChangelogRecords(tally)
			tally = metrics.NewTally()
		}
	})
	b.ReportMetric(float64(t.op.Open()), "open")
	b.ReportMetric(float64(emitted)/float64(b.N), "emitted/part")
}
