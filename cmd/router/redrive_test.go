package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/serve"
	"github.com/sidestream/sidestream/internal/sideroute"
)

// TestRedriveGetsTheClientSection: the redrive router redrive builds
// hands its producer the client section's compression and metadata age
// and its readers the section's fetch bounds, as the router's own clients
// get them; unset, the router's defaults (250 ms, 256 KiB), not
// franz-go's (5 s, 1 MiB).
func TestRedriveGetsTheClientSection(t *testing.T) {
	for _, tc := range []struct {
		name, client string
		codecs       []kgo.CompressionCodec
		age          time.Duration
		partBytes    int32
	}{
		{"set", "client: {compression: zstd, metadata_min_age: 2s, fetch_max_partition_bytes: 65536}\n",
			[]kgo.CompressionCodec{kgo.ZstdCompression(), kgo.NoCompression()}, 2 * time.Second, 65536},
		{"unset", "", nil, config.DefaultMetadataMinAge, config.DefaultFetchMaxPartitionBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgPath := filepath.Join(t.TempDir(), "redrive.yaml")
			if err := os.WriteFile(cfgPath, []byte(`application_id: redrive-opts
brokers: [127.0.0.1:1]
inputs: [{topic: in}]
routing: {default: all}
routes: [{name: all, topic: out}]
dirty: {topic: dirty}
`+tc.client), 0o644); err != nil {
				t.Fatal(err)
			}
			top, err := serve.LoadTopology(cfgPath, serve.Overrides("", "", "", ""), false)
			if err != nil {
				t.Fatal(err)
			}
			target, err := sideroute.Resolve(top, "dirty")
			if err != nil {
				t.Fatal(err)
			}
			f := &redriveCmd{From: "dirty", To: "in", MaxRedrives: 3, TxnRecords: 500}
			if err := f.check(); err != nil {
				t.Fatal(err)
			}
			rd, err := newRedrive(top, target, f, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			client := func(opts ...[]kgo.Opt) *kgo.Client {
				t.Helper()
				cl, err := kgo.NewClient(slices.Concat(append([][]kgo.Opt{{kgo.SeedBrokers("127.0.0.1:1")}}, opts...)...)...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cl.Close)
				return cl
			}
			p := client(rd.ClientOpts, rd.ProduceOpts)
			want := tc.codecs
			if want == nil {
				want = client().OptValue(kgo.ProducerBatchCompression).([]kgo.CompressionCodec) // franz-go's own: snappy, none
			}
			if got := p.OptValue(kgo.ProducerBatchCompression).([]kgo.CompressionCodec); !slices.Equal(got, want) {
				t.Errorf("producer compression %v, want %v", got, want)
			}
			if got := p.OptValue(kgo.MetadataMinAge); got != tc.age {
				t.Errorf("producer metadata min age %v, want %v", got, tc.age)
			}
			r := client(rd.ClientOpts, rd.ReadOpts)
			if got := r.OptValue(kgo.FetchMaxPartitionBytes); got != tc.partBytes {
				t.Errorf("reader fetch max partition bytes %v, want %d", got, tc.partBytes)
			}
			if got := r.OptValue(kgo.MetadataMinAge); got != tc.age {
				t.Errorf("reader metadata min age %v, want %v", got, tc.age)
			}
		})
	}
}
