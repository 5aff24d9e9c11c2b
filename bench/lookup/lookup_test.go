// Package lookupbench is the lookup-table benchmark (tests only): the
// cost of loading a table and of one lookup() per record on W1, for
// docs/benchmarks.md. Not run in CI:
//
//	cd bench && go test ./lookup -run '^$' -bench . -benchmem -count 5
//
// BenchmarkTableLoad1M is the store's side of a load (decode and apply
// 1,000,000 rows, lookup.Table.ApplyJSON as the runtime's loader does
// for a JSON table keyed by its Kafka key; the Kafka fetch is the consumer's and is measured
// end to end by the throughput harness), reporting the heap it holds
// after (peak-heap-MiB). BenchmarkW1 is stage one on W1
// (bench/topologies/w1.yaml) with no lookup and with one lookup() in the
// error route's predicate, on a 100,000-row table. BenchmarkW1Spread is
// the end-to-end run's shape (bench/topologies/w1-lookup.yaml, the
// throughput harness's table): 90,000 distinct user ids over a
// 100,000-row table, in a random order, so that the table's memory is not
// in the CPU cache as it is with BenchmarkW1's 1,024 hot keys.
package lookupbench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
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
			if _, err := t.ApplyJSON(fmt.Sprintf("s-%d", i), 0, raw); err != nil {
				b.Fatal(err)
			}
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
		bind(top, t)
	}
	return top
}

// bind makes top's lookup() and its fast forms read t, as the runtime's
// tables do (internal/runtime/tables.go, lookup and field), without
// their counters.
func bind(top *plan.Plan, t *lookup.Table) {
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
	top.BindTableFields(func(_ string, key any, field string) (any, bool, bool) {
		var buf [32]byte
		k, ok := lookup.AppendKey(buf[:0], key)
		if !ok {
			return nil, false, true
		}
		v, res := t.Field(k, 0, field)
		return v, res != lookup.Miss, true
	})
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

// Spread is the throughput harness's lookup run (bench/throughput,
// features.go): a table of users tableBase ... tableBase+tableRows-1, and
// records whose user_id is 1000 ... 90999 (about 90% hits).
const (
	tableRows = 100_000
	tableBase = 10_000
)

// tableRow is the harness's row of user k (features.go tableRow).
func tableRow(k int) []byte {
	return fmt.Appendf(nil, `{"user_id":%d,"tier":"%s","region":"eu-west-1"}`, k, []string{"vip", "basic", "trial"}[k%3])
}

// w1Spread is bench/topologies/w1-lookup.yaml (withLookup) or w1.yaml,
// the lookup's table filled as the harness fills it, keyed by the Kafka
// key.
func w1Spread(b testing.TB, withLookup bool) *plan.Plan {
	file := map[bool]string{false: "w1.yaml", true: "w1-lookup.yaml"}[withLookup]
	src, err := os.ReadFile("../topologies/" + file)
	if err != nil {
		b.Fatal(err)
	}
	s := strings.NewReplacer("PREFIX", "bench", "TABLE", "bench-users").Replace(string(src)) + "brokers: [127.0.0.1:9092]\n"
	cfg, err := config.Load(file, []byte(s))
	if err != nil {
		b.Fatal(err)
	}
	top, err := plan.Compile(cfg, ".")
	if err != nil {
		b.Fatal(err)
	}
	if withLookup {
		t, _ := lookup.New(lookup.Spec{Mode: lookup.Current})
		for k := tableBase; k < tableBase+tableRows; k++ {
			r, err := lookup.Decode(tableRow(k))
			if err != nil {
				b.Fatal(err)
			}
			t.Apply(strconv.Itoa(k), 0, r)
		}
		bind(top, t)
	}
	return top
}

// spreadRecords are W1 records, one per user id 1000 ... 90999, in a
// random (fixed) order.
func spreadRecords() []*kgo.Record {
	levels := []string{"ERROR", "WARN", "INFO", "ERROR"}
	ids := make([]int, 90_000)
	for i := range ids {
		ids[i] = 1000 + i
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	recs := make([]*kgo.Record, len(ids))
	for i, id := range ids {
		recs[i] = &kgo.Record{Topic: "logs", Key: []byte("k"), Timestamp: time.UnixMilli(1789992000000),
			Value: fmt.Appendf(nil, `{"level":"%s","service":"s-%d","user_id":%d,"msg":"m","latency_ms":%d}`, levels[i%4], i%200, id, i)}
	}
	return recs
}

func BenchmarkW1Spread(b *testing.B) {
	recs := spreadRecords()
	for _, withLookup := range []bool{false, true} {
		b.Run(map[bool]string{false: "no-lookup", true: "one-lookup"}[withLookup], func(b *testing.B) {
			e := stageone.New(w1Spread(b, withLookup))
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
	plain, looked = stageone.New(w1Spread(t, false)), stageone.New(w1Spread(t, true))
	for _, r := range spreadRecords()[:1000] {
		a, b := plain.Process(r, metrics.NewTally()), looked.Process(r, metrics.NewTally())
		if len(a) != 1 || len(b) != 1 || a[0].Topic != b[0].Topic {
			t.Fatalf("%s: %v vs %v", r.Value, a, b)
		}
	}
}
