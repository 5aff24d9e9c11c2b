package config

import (
	"strings"
	"testing"
)

func TestClientDefaults(t *testing.T) {
	c := mustLoad(t, minimalYAML).Client
	want := Client{FetchMaxBytes: DefaultFetchMaxBytes, FetchMaxPartitionBytes: DefaultFetchMaxPartitionBytes,
		MaxBufferedRecords: DefaultMaxBufferedRecords, MaxBufferedBytes: DefaultMaxBufferedBytes,
		MetadataMinAge: Duration(DefaultMetadataMinAge), Compression: CompressionSnappy}
	if c != want {
		t.Fatalf("client defaults %+v, want %+v", c, want)
	}
	// A produce buffer always holds two of the largest records.
	c = mustLoad(t, strings.Replace(minimalYAML, "dirty: {topic: out.dirty}", "dirty: {topic: out.dirty, max_record_bytes: 50000000}", 1)).Client
	if c.MaxBufferedBytes != 100000000 {
		t.Fatalf("max_buffered_bytes %d with 50 MB records", c.MaxBufferedBytes)
	}
}

// TestClientCompression: every codec loads as written; the unset default
// is snappy, franz-go's own (TestClientDefaults); anything else is refused
// at its line and column, naming the codecs (testdata/bad/client-compression).
func TestClientCompression(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		c := mustLoad(t, minimalYAML+"client: {compression: "+codec+"}\n").Client
		if c.Compression != codec {
			t.Errorf("compression: %s loads as %q", codec, c.Compression)
		}
	}
	_, err := Load("t.yaml", []byte(minimalYAML+"client:\n  compression: ZSTD\n"))
	want := `t.yaml:9:16: client.compression must be "none", "gzip", "snappy", "lz4" or "zstd", got "ZSTD"`
	if err == nil || err.Error() != want {
		t.Errorf("compression: ZSTD: %v, want %s", err, want)
	}
}

func TestLimitsDefaults(t *testing.T) {
	src := strings.Replace(minimalYAML, "    topic: out\n", `    topic: out
  - name: win
    topic: win
    window:
      type: tumbling
      size: 1m
      late_topic: win.late
      aggregates: [{name: n, fn: count}]
      limits: {max_entries: 100, overflow_topic: win.overflow}
`, 1)
	cfg := mustLoad(t, src)
	l := cfg.Routes[1].Window.Limits
	if l == nil || l.OnOverflow != OverflowRoute || l.MaxEntries != 100 || l.MaxBytes != 0 {
		t.Fatalf("limits %+v", l)
	}
	if cfg.Routes[0].Window != nil || mustLoad(t, minimalYAML).Routes[0].Window != nil {
		t.Fatal("a plain route has no window")
	}
}
