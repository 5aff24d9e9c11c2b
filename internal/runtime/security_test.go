package runtime

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/kclient/kclienttest"
	"github.com/sidestream/sidestream/internal/plan"
)

// TestEveryClientIsSecured: the group client, the admin client and the
// restore client (all built from the processor's options) get the
// topology's TLS and SASL settings.
func TestEveryClientIsSecured(t *testing.T) {
	ca, _, _ := kclienttest.PKI(t)
	src := fmt.Sprintf(`application_id: unit
brokers: [127.0.0.1:9092]
inputs: [{topic: in}]
routing: {default: all}
routes: [{name: all, topic: out}]
dirty: {topic: dirty}
security:
  protocol: sasl_ssl
  tls: {ca_file: %q}
  sasl: {mechanism: SCRAM-SHA-512, username: router}
`, ca)
	cfg, err := config.Load("unit.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(config.Overrides{Security: config.SecurityOverrides{Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(top, WithKgoOpts(kgo.ClientID("x")))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, opts []kgo.Opt) {
		t.Helper()
		names, tc := kclienttest.OptValues(t, opts...)
		if strings.Join(names, ",") != "SCRAM-SHA-512" || tc == nil || tc.RootCAs == nil {
			t.Errorf("%s: SASL %v, TLS %v: want SCRAM-SHA-512 over TLS with the CA", what, names, tc)
		}
	}
	check("group client", p.clientOpts())
	check("admin and restore clients", p.opts.kgoOpts)
	_, admCl, err := kclient.NewAdmin(top.Settings.Brokers, p.opts.kgoOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if ms, _ := admCl.OptValue(kgo.SASL).([]sasl.Mechanism); len(ms) != 1 {
		t.Errorf("admin client SASL = %v", ms)
	}

	// A config whose settings cannot be used fails New, not the first dial.
	top.Settings.Security.SASL.Password = ""
	if _, err := New(top); err == nil || !strings.Contains(err.Error(), "password") {
		t.Errorf("New without a password: %v", err)
	}
}

// TestClientSectionReachesEveryConsumer: client.metadata_min_age (and the
// fetch bounds) reach the group client and the restore client; unset, the
// router asks for metadata again after 250 ms, not franz-go's 5 s, so a
// moved leader does not hold a flush for 5 s. client.compression reaches
// the group client, the one client that produces.
func TestClientSectionReachesEveryConsumer(t *testing.T) {
	build := func(client string) *Processor {
		t.Helper()
		cfg, err := config.Load("unit.yaml", []byte(`application_id: unit
brokers: [127.0.0.1:9092]
inputs: [{topic: in}]
routing: {default: all}
routes: [{name: all, topic: out}]
dirty: {topic: dirty}
`+client))
		if err != nil {
			t.Fatal(err)
		}
		top, err := plan.Compile(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(top)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	check := func(what string, opts []kgo.Opt, age time.Duration, partBytes int32) {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if got := cl.OptValue(kgo.MetadataMinAge); got != age {
			t.Errorf("%s: metadata min age %v, want %v", what, got, age)
		}
		if got := cl.OptValue(kgo.FetchMaxPartitionBytes); got != partBytes {
			t.Errorf("%s: fetch max partition bytes %v, want %d", what, got, partBytes)
		}
	}
	p := build("")
	check("group client, defaults", p.clientOpts(), config.DefaultMetadataMinAge, config.DefaultFetchMaxPartitionBytes)
	check("restore client, defaults", p.restoreClientOpts(), config.DefaultMetadataMinAge, config.DefaultFetchMaxPartitionBytes)
	p = build("client: {metadata_min_age: 1s, fetch_max_partition_bytes: 65536}\n")
	check("group client", p.clientOpts(), time.Second, 65536)
	check("restore client", p.restoreClientOpts(), time.Second, 65536)

	// client.compression: unset, the group client prefers what franz-go
	// prefers by itself (snappy, then none), so nothing changes for a
	// topology without it; set, the named codec, then none.
	compression := func(opts []kgo.Opt) []kgo.CompressionCodec {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.OptValue(kgo.ProducerBatchCompression).([]kgo.CompressionCodec)
	}
	franz := compression(nil)
	if got := compression(build("").clientOpts()); !slices.Equal(got, franz) {
		t.Errorf("group client, default compression %v, want franz-go's own %v", got, franz)
	}
	for _, c := range []struct {
		name string
		want []kgo.CompressionCodec
	}{
		{"none", []kgo.CompressionCodec{kgo.NoCompression()}},
		{"gzip", []kgo.CompressionCodec{kgo.GzipCompression(), kgo.NoCompression()}},
		{"snappy", []kgo.CompressionCodec{kgo.SnappyCompression(), kgo.NoCompression()}},
		{"lz4", []kgo.CompressionCodec{kgo.Lz4Compression(), kgo.NoCompression()}},
		{"zstd", []kgo.CompressionCodec{kgo.ZstdCompression(), kgo.NoCompression()}},
	} {
		if got := compression(build("client: {compression: " + c.name + "}\n").clientOpts()); !slices.Equal(got, c.want) {
			t.Errorf("group client, compression %s: %v, want %v", c.name, got, c.want)
		}
	}

	if _, err := config.Load("unit.yaml", []byte("client: {metadata_min_age: 0s}\n")); err == nil || !strings.Contains(err.Error(), "client.metadata_min_age: duration must be positive") {
		t.Errorf("metadata_min_age 0s: %v", err)
	}
}
