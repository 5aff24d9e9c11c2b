package config

// Tracing is the tracing section: OpenTelemetry spans of a sampled share
// of records, exported over OTLP. The W3C trace context of every input
// travels to what the router writes for it whether spans are on or off
// (docs/tracing.md); this section only adds the router's own spans.
type Tracing struct {
	// Spans turns the spans on (default off: the record path then pays
	// nothing for them).
	Spans bool `yaml:"spans"`
	// SampleRatio is the share of input records that get a span, decided
	// by their trace id (or at random for a record without a context).
	SampleRatio *float64 `yaml:"sample_ratio"`
	// Endpoint is the OTLP collector; empty: the exporter's default and
	// the OTEL_EXPORTER_OTLP_* variables.
	Endpoint string `yaml:"endpoint"`
	// Protocol is grpc or http (http/protobuf).
	Protocol string `yaml:"protocol"`
	// Insecure sends without TLS.
	Insecure bool `yaml:"insecure"`
	// Links is how many inputs' contexts beyond the first a window keeps
	// for its result span's links (state: 25 bytes each per window).
	Links *int `yaml:"links"`
}

// Values of the tracing section.
const (
	TracingGRPC = "grpc"
	TracingHTTP = "http"

	// DefaultSampleRatio is tracing.sample_ratio's default.
	DefaultSampleRatio = 0.01
	// DefaultTraceLinks is tracing.links' default; MaxTraceLinks its
	// bound (the window operator keeps at most 64 contexts).
	DefaultTraceLinks = 8
	MaxTraceLinks     = 63
)

// SampleRatioOrDefault is tracing.sample_ratio as applied.
func (t Tracing) SampleRatioOrDefault() float64 {
	if t.SampleRatio == nil {
		return DefaultSampleRatio
	}
	return *t.SampleRatio
}

// LinksOrDefault is tracing.links as applied.
func (t Tracing) LinksOrDefault() int {
	if t.Links == nil {
		return DefaultTraceLinks
	}
	return *t.Links
}

// validateTracing checks the tracing section as the file gives it.
func (d *doc) validateTracing() {
	t := d.cfg.Tracing
	if p := t.Protocol; p != TracingGRPC && p != TracingHTTP {
		d.at("tracing.protocol", "tracing.protocol must be %q or %q, got %q", TracingGRPC, TracingHTTP, p)
	}
	if r := t.SampleRatioOrDefault(); !(r >= 0 && r <= 1) {
		d.at("tracing.sample_ratio", "tracing.sample_ratio must be between 0 and 1, got %v", r)
	}
	if n := t.LinksOrDefault(); n < 0 || n > MaxTraceLinks {
		d.at("tracing.links", "tracing.links must be between 0 and %d, got %d", MaxTraceLinks, n)
	}
}
