package config

import (
	"fmt"
	"time"
)

// Overflow policies of a limits block (on_overflow).
const (
	// OverflowRoute sends a record that would open a new window or
	// assembly beyond the limit, unchanged, to overflow_topic.
	OverflowRoute = "route"
	// OverflowEvict makes room: the oldest open windows are emitted early
	// as final results marked "evicted": true; the oldest open assemblies
	// go to the incomplete route with reason evicted.
	OverflowEvict = "evict"
)

// OverflowSuffix names a route's overflow route: "revenue.overflow".
const OverflowSuffix = ".overflow"

// Limits bound the state one task of a window or assembly route holds
// (no bound by default). They gate only new windows or assemblies: a
// record for one that is open always updates it.
type Limits struct {
	// MaxEntries bounds the open windows (sessions) or open assemblies of
	// one task.
	MaxEntries int `yaml:"max_entries"`
	// MaxBytes bounds the estimated bytes of one task's open windows or
	// assemblies (stored keys, values and timers).
	MaxBytes int64 `yaml:"max_bytes"`
	// OnOverflow is route (the default) or evict.
	OnOverflow string `yaml:"on_overflow"`
	// OverflowTopic receives the refused records (on_overflow: route).
	OverflowTopic string `yaml:"overflow_topic"`
}

// Client bounds the Kafka client's buffers, so a burst cannot exhaust
// memory: what is fetched ahead of processing and what waits to be
// produced; how soon the client asks again where a partition's leader
// is; and how produced batches are compressed.
type Client struct {
	// FetchMaxBytes is the most one fetch response may hold (franz-go's
	// own default is 50 MiB). The broker still returns a
	// record batch larger than it, so no record is ever stuck.
	FetchMaxBytes int32 `yaml:"fetch_max_bytes"`
	// FetchMaxPartitionBytes is the most one partition contributes to a
	// fetch response (franz-go's and Kafka's default is 1 MiB:
	// each halving cut the router's peak RSS by about a sixth to a quarter
	// without costing throughput on loopback, docs/benchmarks.md).
	FetchMaxPartitionBytes int32 `yaml:"fetch_max_partition_bytes"`
	// MaxConcurrentFetches bounds the fetches in flight or buffered across
	// brokers (0: one per broker, franz-go's default).
	MaxConcurrentFetches int `yaml:"max_concurrent_fetches"`
	// MaxBufferedRecords bounds the records waiting to be produced;
	// Produce blocks beyond it.
	MaxBufferedRecords int `yaml:"max_buffered_records"`
	// MaxBufferedBytes bounds the bytes waiting to be produced; Produce
	// blocks beyond it.
	MaxBufferedBytes int `yaml:"max_buffered_bytes"`
	// MetadataMinAge is the shortest time between two metadata requests
	// (franz-go's own default is 5 s). A produce refused with
	// NOT_LEADER_FOR_PARTITION (a leader moved: a broker restarted, a
	// topic was just created) holds the partition's records until the
	// next metadata response; with 5 s a flush, and so the commit of an
	// interval, waited up to 5 s (docs/benchmarks-history.md, "The 5 s stall").
	MetadataMinAge Duration `yaml:"metadata_min_age"`
	// Compression is the codec of every produced record batch: none,
	// gzip, snappy, lz4 or zstd (franz-go's own default is snappy). A batch
	// that does not shrink is sent uncompressed, and zstd falls back to
	// none on a broker older than Kafka 2.1. The codec's level is the
	// library's default: franz-go's levels are each library's own scale,
	// not Kafka's compression.*.level, and a level out of range is
	// silently replaced, so the section offers none.
	Compression string `yaml:"compression"`
}

// The codecs of client.compression.
const (
	CompressionNone   = "none"
	CompressionGzip   = "gzip"
	CompressionSnappy = "snappy"
	CompressionLz4    = "lz4"
	CompressionZstd   = "zstd"
)

// Client defaults.
const (
	DefaultFetchMaxBytes          = 8 << 20
	DefaultFetchMaxPartitionBytes = 256 << 10
	DefaultMaxBufferedRecords     = 10000
	DefaultMaxBufferedBytes       = 64 << 20
	DefaultMetadataMinAge         = 250 * time.Millisecond
	// DefaultCompression is franz-go's own preference (snappy, else
	// none), so a topology without the field produces as before.
	DefaultCompression = CompressionSnappy
)

// validateClient checks the client section.
func (d *doc) validateClient() {
	c := d.cfg.Client
	for _, f := range []struct {
		path string
		v    int64
	}{
		{"client.fetch_max_bytes", int64(c.FetchMaxBytes)},
		{"client.fetch_max_partition_bytes", int64(c.FetchMaxPartitionBytes)},
		{"client.max_buffered_records", int64(c.MaxBufferedRecords)},
		{"client.max_buffered_bytes", int64(c.MaxBufferedBytes)},
	} {
		d.positive(f.path, f.v)
	}
	if c.MaxConcurrentFetches < 0 {
		d.at("client.max_concurrent_fetches", "client.max_concurrent_fetches must not be negative (0 is one per broker), got %d", c.MaxConcurrentFetches)
	}
	if c.FetchMaxPartitionBytes > c.FetchMaxBytes && c.FetchMaxBytes > 0 {
		d.at("client.fetch_max_partition_bytes", "client.fetch_max_partition_bytes %d is larger than fetch_max_bytes %d", c.FetchMaxPartitionBytes, c.FetchMaxBytes)
	}
	if mr := d.cfg.Dirty.MaxRecordBytes; c.MaxBufferedBytes > 0 && c.MaxBufferedBytes < 2*mr {
		d.at("client.max_buffered_bytes", "client.max_buffered_bytes %d must hold two records of dirty.max_record_bytes (%d)", c.MaxBufferedBytes, 2*mr)
	} else if mr := d.cfg.Limits.MaxRecordBytes; c.MaxBufferedBytes > 0 && c.MaxBufferedBytes < 2*mr {
		d.at("client.max_buffered_bytes", "client.max_buffered_bytes %d must hold two records of limits.max_record_bytes (%d)", c.MaxBufferedBytes, 2*mr)
	}
	switch c.Compression {
	case CompressionNone, CompressionGzip, CompressionSnappy, CompressionLz4, CompressionZstd:
	default:
		d.at("client.compression", "client.compression must be %q, %q, %q, %q or %q, got %q",
			CompressionNone, CompressionGzip, CompressionSnappy, CompressionLz4, CompressionZstd, c.Compression)
	}
}

// positive reports a value that is not positive; an explicit 0 is named
// as such (0 means "default" in the model).
func (d *doc) positive(path string, v int64) {
	if n, ok := d.nodes[path]; ok && n.Tag == "!!int" && isZero(n.Value) {
		d.at(path, "%s must not be 0; remove it to get the default", path)
		return
	}
	if v < 0 {
		d.at(path, "%s must be positive, got %d", path, v)
	}
}

// validateLimits checks the limits block of a window or assembly route at
// p (routes[i].window or routes[i].assemble); perRecord is how many
// windows one record can open.
func (d *doc) validateLimits(p, route string, l *Limits, perRecord int64, evictTo string, useTopic useTopicFunc) {
	if l == nil {
		return
	}
	lp := p + ".limits"
	for _, f := range []struct {
		path string
		v    int64
	}{{lp + ".max_entries", int64(l.MaxEntries)}, {lp + ".max_bytes", l.MaxBytes}} {
		if n, ok := d.nodes[f.path]; ok && n.Tag == "!!int" && isZero(n.Value) {
			d.at(f.path, "%s must not be 0; remove it for no bound", f.path)
		} else if f.v < 0 {
			d.at(f.path, "%s must be positive, got %d", f.path, f.v)
		}
	}
	if l.MaxEntries == 0 && l.MaxBytes == 0 {
		d.at(lp, "%s: set max_entries, max_bytes or both (or remove limits for no bound)", lp)
	}
	if l.MaxEntries > 0 && int64(l.MaxEntries) < perRecord {
		d.at(lp+".max_entries", "%s.max_entries %d is below the %d windows one record opens (size/advance)", lp, l.MaxEntries, perRecord)
	}
	switch l.OnOverflow {
	case OverflowRoute:
		if l.OverflowTopic == "" {
			d.at(lp, "%s.overflow_topic is required with on_overflow: route: refused records go there, never silently away", lp)
		}
		useTopic(lp+".overflow_topic", fmt.Sprintf("the overflow route of %q", route), false, l.OverflowTopic)
	case OverflowEvict:
		if l.OverflowTopic != "" {
			d.at(lp+".overflow_topic", "%s.overflow_topic is never written with on_overflow: evict (evicted state goes to %s); remove it", lp, evictTo)
		}
	default:
		d.at(lp+".on_overflow", "%s.on_overflow must be %q or %q, got %q", lp, OverflowRoute, OverflowEvict, l.OnOverflow)
	}
}
