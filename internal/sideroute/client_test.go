package sideroute

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// withClientSection is top with a client section that changes what every
// client of the redrive should be given: zstd, a 1 s metadata age, 64 KiB
// per fetched partition.
func withClientSection(top *plan.Plan) *plan.Plan {
	top.Settings.Client.Compression = config.CompressionZstd
	top.Settings.Client.MetadataMinAge = config.Duration(time.Second)
	top.Settings.Client.FetchMaxPartitionBytes = 64 << 10
	return top
}

func redriveWithSection(top *plan.Plan, brokers []string) Redrive {
	return Redrive{Brokers: brokers, Topology: top, To: "logs", RunID: "r",
		ReadOpts: kclient.ConsumerOpts(top.Settings.Client), ProduceOpts: kclient.ProducerOpts(top.Settings.Client)}
}

// TestRedriveClientsGetTheClientSection: the producer a redrive builds
// has the client section's compression and metadata age besides its
// transactional id, and the clients that read the side route and the
// ledger its fetch bounds and metadata age.
func TestRedriveClientsGetTheClientSection(t *testing.T) {
	top := withClientSection(exampleCopy(t, []string{"127.0.0.1:1"}, func(s string) string { return s }))
	from, err := Resolve(top, "dirty")
	if err != nil {
		t.Fatal(err)
	}
	rd := redriveWithSection(top, []string{"127.0.0.1:1"})
	rd.From, rd.TxnTimeout = from, 10*time.Second
	client := func(what string, opts []kgo.Opt) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	p := client("producer", rd.producerOpts())
	if got := p.OptValue(kgo.ProducerBatchCompression).([]kgo.CompressionCodec); !slices.Equal(got, []kgo.CompressionCodec{kgo.ZstdCompression(), kgo.NoCompression()}) {
		t.Errorf("producer compression %v, want zstd then none", got)
	}
	if got := p.OptValue(kgo.MetadataMinAge); got != time.Second {
		t.Errorf("producer metadata min age %v, want 1s", got)
	}
	if got := p.OptValue(kgo.TransactionalID); got != TransactionalID(top.Settings.ApplicationID, "dirty") {
		t.Errorf("producer transactional id %v", got)
	}
	for _, topic := range []string{from.Topic, LedgerTopic(top.Settings.ApplicationID)} {
		r := client("reader of "+topic, rd.readOptions(topic).readerOpts(map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}))
		if got := r.OptValue(kgo.FetchMaxPartitionBytes); got != int32(64<<10) {
			t.Errorf("reader of %s: fetch max partition bytes %v, want 65536", topic, got)
		}
		if got := r.OptValue(kgo.MetadataMinAge); got != time.Second {
			t.Errorf("reader of %s: metadata min age %v, want 1s", topic, got)
		}
	}
}

// TestRedriveWritesWithTheSectionsCompression: on kfake, records
// redriven under client.compression zstd are stored in zstd batches (the
// values repeat themselves, so a batch shrinks and is sent compressed);
// franz-go's own default would be snappy.
func TestRedriveWritesWithTheSectionsCompression(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "logs", "logs.dirty"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	pad := strings.Repeat("compressible ", 40)
	var recs []*kgo.Record
	for range 20 {
		recs = append(recs, &kgo.Record{Topic: "logs.dirty", Value: []byte(`{"level":"TRACE","pad":"` + pad + `"}`),
			Headers: []kgo.RecordHeader{{Key: wire.HeaderReason, Value: []byte("schema_violation")}}})
	}
	produce(t, brokers, recs...)
	top := withClientSection(exampleCopy(t, brokers, func(s string) string { return s }))
	from, err := Resolve(top, "dirty")
	if err != nil {
		t.Fatal(err)
	}
	rd := redriveWithSection(top, brokers)
	rd.From = from
	counts, err := rd.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if counts.Redriven != 20 {
		t.Fatalf("counts %+v, want 20 redriven", counts)
	}
	got := readAll(t, brokers, "logs")
	if len(got) != 20 {
		t.Fatalf("%d records on logs, want 20", len(got))
	}
	for i, r := range got {
		if codec := r.Attrs.CompressionType(); codec != uint8(kgo.CodecZstd) {
			t.Fatalf("redriven record %d stored in a batch of codec %d, want zstd (%d)", i, codec, kgo.CodecZstd)
		}
	}
}
