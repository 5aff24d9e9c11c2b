// Package lookupbench is the lookup-table benchmark (tests only): the
// cost of loading a table and of one lookup() per record on W1, for
// docs/benchmarks.md. Not run in CI:
//
//	cd bench && go test ./lookup -run '^$' -bench . -benchmem -count 5
//
// BenchmarkTableLoad1M is the store's side of a load (decode and apply
// 1,000,000 rows; the Kafka fetch is the consumer's and is measured
// end to end by the throughput harness), reporting the heap it holds
// after (peak-heap-MiB). BenchmarkW1 is stage one on W1
// (bench/topologies/w1.yaml) with no lookup and with one lookup() in the
// error route's predicate, on a 100,000-row table.
package lookupbench

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/lookup"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
)

func row(i int) []byte {
	return fmt.Appendf(nil, `{"id":"s-%d","tier":"%s","region":"eu","since":%d}`, i, []string{"vip", "basic"}[i%2], 1789992000000+i)
}

func BenchmarkTableLoad1M(b *testing.B) {
	const n = 1_000_000
	rows := make([][]byte, n)
	for i := range rows {
		rows[i] = row(i)
	}
	for b.Loop() {
		t, err := lookup.New(lookup.Spec{Mode: lookup.Current})
		if err != nil {
			b.Fatal(err)
		}
		for i, raw := range rows {
			r, err := lookup.Decode(raw)
			if err != nil {
				b.Fatal(err)
			}
			t.Apply(fmt.Sprintf("s-%d", i), 0, r)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "peak-heap-MiB")
		runtime.KeepAlive(t)
	}
	b.ReportMetric(float64(n), "rows")
}

// w1 is bench/topologies/w1.yaml on a fixed prefix; lookup adds one
// lookup() to the error route's predicate and declares its table.
func w1(b testing.TB, withLookup bool) *plan.Plan {
	src, err := os.ReadFile("../topologies/w1.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s := strings.ReplaceAll(string(src), "PREFIX", "bench") + "brokers: [127.0.0.1:9092]\n"
	if withLookup {
		s = strings.Replace(s, `when: level == "ERROR"`, `when: level == "ERROR" && lookup("services", service)?.tier != "muted"`, 1)
		s += "tables:\n  - {name: services, topic: services}\n"
	}
	cfg, err := config.Load("w1.yaml", []byte(s))
	if err != nil {
		b.Fatal(err)
	}
	top, err := plan.Compile(cfg, ".")
	if err != nil {
		b.Fatal(err)
	}
	if withLookup {
		t, _ := lookup.New(lookup.Spec{Mode: lookup.Current})
		for i := range 100_000 {
			r, _ := lookup.Decode(row(i))
			t.Apply(fmt.Sprintf("s-%d", i), 0, r)
		}
		top.BindTables(func(_ string, key any, at int64) (any, bool, error) {
			k, ok := lookup.KeyString(key)
			if !ok {
				return nil, false, nil
			}
			r, res := t.Get(k, at)
			if res == lookup.Miss {
				return nil, false, nil
			}
			return r, res == lookup.TooOld, nil
		})
	}
	return top
}

func BenchmarkW1(b *testing.B) {
	levels := []string{"ERROR", "WARN", "INFO", "ERROR"}
	recs := make([]*kgo.Record, 1024)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "logs", Key: []byte("k"), Timestamp: time.UnixMilli(1789992000000),
			Value: fmt.Appendf(nil, `{"level":"%s","service":"s-%d","msg":"m","latency_ms":%d}`, levels[i%4], i*97%200_000, i)}
	}
	for _, withLookup := range []bool{false, true} {
		b.Run(map[bool]string{false: "no-lookup", true: "one-lookup"}[withLookup], func(b *testing.B) {
			e := stageone.New(w1(b, withLookup))
			tally := metrics.NewTally()
			stageonetest.Loop(b, func(i int) { e.Process(recs[i%len(recs)], tally) })
		})
	}
}

// TestW1Lookup: the two W1 variants route the same records the same way
// (no service is muted), so the benchmark compares equal work.
func TestW1Lookup(t *testing.T) {
	plain, looked := stageone.New(w1(t, false)), stageone.New(w1(t, true))
	for i, level := range []string{"ERROR", "WARN", "INFO", "x"} {
		r := &kgo.Record{Topic: "logs", Value: fmt.Appendf(nil, `{"level":"%s","service":"s-%d"}`, level, i)}
		a, b := plain.Process(r, metrics.NewTally()), looked.Process(r, metrics.NewTally())
		if len(a) != 1 || len(b) != 1 || a[0].Topic != b[0].Topic {
			t.Fatalf("%s: %v vs %v", level, a, b)
		}
	}
}
