package processor

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/changelog"
	"github.com/sidestream/sidestream/topology"
)

// BenchmarkRestore reads one changelog partition of 200,000 window-state
// records (distinct keys shaped like the window operator's: a 24-byte
// key, a 30-byte value) into a fresh store, as a task does on
// assignment, read_committed. The broker is kfake in this process, so
// its cost is in the figure. records/s is the restore rate.
func BenchmarkRestore(b *testing.B) {
	const n = 200_000
	c := newCluster(b)
	brokers := c.ListenAddrs()
	cfg, err := topology.LoadFile("testdata/errors-per-service.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if err := cfg.Apply(topology.Overrides{Brokers: brokers}); err != nil {
		b.Fatal(err)
	}
	top, err := topology.Compile(cfg, "testdata/")
	if err != nil {
		b.Fatal(err)
	}
	p, err := New(top, WithLogger(testLogger()))
	if err != nil {
		b.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("bench-changelog"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	p.adm = kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := p.adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": new("compact")}, "bench-changelog"); err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 30)
	for i := range n {
		key := fmt.Appendf(nil, "w%015d", i%1000) // a group key, then a window start
		key = binary.BigEndian.AppendUint64(key, uint64(i))
		cl.Produce(ctx, &kgo.Record{Key: key, Value: val}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	for _, store := range []string{"memory", "pebble"} {
		b.Run(store, func(b *testing.B) {
			total := 0
			start := time.Now()
			for b.Loop() {
				var st changelog.Store = changelog.NewMemory()
				if store == "pebble" {
					if st, err = changelog.OpenPebble(b.TempDir()); err != nil {
						b.Fatal(err)
					}
				}
				got, _, err := p.restore(context.Background(), "bench", "bench-changelog", 0, st)
				if err != nil || got != n || st.Len() != n {
					b.Fatalf("restored %d records into %d keys, want %d: %v", got, st.Len(), n, err)
				}
				total += got
				_ = st.Close()
			}
			b.ReportMetric(float64(total)/time.Since(start).Seconds(), "records/s")
		})
	}
}
