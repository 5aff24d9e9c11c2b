package kclient

import (
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
)

// Opts are the client section's options: the fetch and produce buffers'
// bounds, the metadata minimum age and the produced batches' compression;
// a zero field keeps franz-go's default. The router's clients both fetch
// and produce, so they take all of them.
func Opts(c config.Client) []kgo.Opt {
	return append(fetchOpts(c), ProducerOpts(c)...)
}

// ConsumerOpts are the options of the client section that apply to a
// client that only reads (router redrive's readers): the fetch bounds and
// the metadata minimum age.
func ConsumerOpts(c config.Client) []kgo.Opt {
	return append(fetchOpts(c), metadataOpts(c)...)
}

// ProducerOpts are the options of the client section that apply to a
// client that only produces (router redrive's producer): the produce
// buffers' bounds, the metadata minimum age and the compression.
func ProducerOpts(c config.Client) []kgo.Opt {
	var o []kgo.Opt
	if c.MaxBufferedRecords > 0 {
		o = append(o, kgo.MaxBufferedRecords(c.MaxBufferedRecords))
	}
	if c.MaxBufferedBytes > 0 {
		o = append(o, kgo.MaxBufferedBytes(c.MaxBufferedBytes))
	}
	o = append(o, metadataOpts(c)...)
	if pref := compression(c.Compression); pref != nil {
		o = append(o, kgo.ProducerBatchCompression(pref...))
	}
	return o
}

func fetchOpts(c config.Client) []kgo.Opt {
	var o []kgo.Opt
	if c.FetchMaxBytes > 0 {
		o = append(o, kgo.FetchMaxBytes(c.FetchMaxBytes))
	}
	if c.FetchMaxPartitionBytes > 0 {
		o = append(o, kgo.FetchMaxPartitionBytes(c.FetchMaxPartitionBytes))
	}
	if c.MaxConcurrentFetches > 0 {
		o = append(o, kgo.MaxConcurrentFetches(c.MaxConcurrentFetches))
	}
	return o
}

func metadataOpts(c config.Client) []kgo.Opt {
	if c.MetadataMinAge > 0 {
		return []kgo.Opt{kgo.MetadataMinAge(c.MetadataMinAge.D())}
	}
	return nil
}

// compression is client.compression's codec preference, nil for "" (and
// for a name validation refuses). Each is franz-go's default shape, the
// codec then none: snappy is exactly its default. None is what franz-go
// sends anyway when the codec cannot be used (zstd before Kafka 2.1) or a
// batch does not shrink; it is listed so the preference says so. A new
// slice every call: franz-go's DefaultCompressor rewrites the one it is
// given, and clients are built concurrently.
func compression(name string) []kgo.CompressionCodec {
	var c kgo.CompressionCodec
	switch name {
	case config.CompressionNone:
		return []kgo.CompressionCodec{kgo.NoCompression()}
	case config.CompressionGzip:
		c = kgo.GzipCompression()
	case config.CompressionSnappy:
		c = kgo.SnappyCompression()
	case config.CompressionLz4:
		c = kgo.Lz4Compression()
	case config.CompressionZstd:
		c = kgo.ZstdCompression()
	default:
		return nil
	}
	return []kgo.CompressionCodec{c, kgo.NoCompression()}
}

// NewAdmin is an admin client on brokers with opts (SecurityOpts among
// them); close the kgo.Client when done.
func NewAdmin(brokers []string, opts ...kgo.Opt) (*kadm.Client, *kgo.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}
