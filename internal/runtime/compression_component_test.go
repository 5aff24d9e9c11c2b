package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/readback"
)

// codecTally counts the record batches a producer wrote, by topic and
// codec.
type codecTally struct {
	mu sync.Mutex
	n  map[string]map[uint8]int
}

var _ kgo.HookProduceBatchWritten = (*codecTally)(nil)

func (c *codecTally) OnProduceBatchWritten(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.ProduceBatchMetrics) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]map[uint8]int{}
	}
	if c.n[topic] == nil {
		c.n[topic] = map[uint8]int{}
	}
	c.n[topic][m.CompressionType]++
}

func (c *codecTally) of(topic string) map[uint8]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[topic]
}

// TestClientCompressionComponent runs a pass-through topology on kfake
// with client.compression zstd (exactly-once), none (at-least-once) and
// unset (snappy, franz-go's own default): every batch the router produced
// to the output carries that codec, and so does every record read back
// from the broker (the codec of the batch it came in; the transaction
// markers' batches are never compressed and are not records). The values repeat themselves, so each batch
// shrinks under any codec and is sent compressed when one is set.
func TestClientCompressionComponent(t *testing.T) {
	const n = 500
	for _, c := range []struct {
		name, client, guarantee string
		codec                   kgo.CompressionCodecType
	}{
		{"zstd", "client: {compression: zstd}\n", "exactly_once", kgo.CodecZstd},
		{"none", "client: {compression: none}\n", "at_least_once", kgo.CodecNone},
		{"default", "", "exactly_once", kgo.CodecSnappy},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := newCluster(t, kfake.SeedTopics(3, "in"))
			brokers := cl.ListenAddrs()
			top := compileAt(t, "compressed.yaml", `application_id: compressed
guarantee: `+c.guarantee+`
inputs: [{topic: in}]
routing: {default: all}
routes: [{name: all, topic: out}]
dirty: {topic: dirty}
`+c.client, brokers, "")

			// The input goes uncompressed, so nothing the router writes
			// is a batch it was handed.
			in, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("in"),
				kgo.ProducerBatchCompression(kgo.NoCompression()))
			if err != nil {
				t.Fatal(err)
			}
			pad := strings.Repeat("compressible ", 40)
			for i := range n {
				in.Produce(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, `{"id":%d,"pad":%q}`, i, pad)}, nil)
			}
			if err := in.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			in.Close()

			var produced codecTally
			r := start(t, top, "a", WithKgoOpts(kgo.WithHooks(&produced)))
			waitConsumed(t, r.p.Metrics(), n, time.Minute)
			r.stop(t)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			recs, err := readback.ReadCommitted(ctx, brokers, "out")
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != n {
				t.Fatalf("read back %d records from out, want %d", len(recs), n)
			}
			want := uint8(c.codec)
			if tally := produced.of("out"); len(tally) != 1 || tally[want] == 0 {
				t.Errorf("produced batches of out by codec %v, want every one %d (%s)", tally, want, c.name)
			}
			stored := map[uint8]int{}
			for _, rec := range recs {
				stored[rec.Attrs.CompressionType()]++
			}
			if stored[want] != n {
				t.Errorf("records read back from out by their batch's codec %v, want all %d %d (%s)", stored, n, want, c.name)
			}
		})
	}
}
