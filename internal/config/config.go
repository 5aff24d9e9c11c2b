package config

import (
	"encoding/json"
	"log/slog"
	"time"
)

// Guarantee names the delivery guarantee of a topology's outputs.
type Guarantee string

const (
	// ExactlyOnce writes every output and the input offsets of one commit
	// interval in one Kafka transaction. It is the default.
	ExactlyOnce Guarantee = "exactly_once"
	// AtLeastOnce writes with an idempotent producer and commits input
	// offsets only after the outputs are acknowledged.
	AtLeastOnce Guarantee = "at_least_once"
)

// Match says how routes are evaluated for one record.
type Match string

const (
	// MatchFirst sends a record to the first route whose predicate holds.
	MatchFirst Match = "first"
	// MatchAll sends a record to every route whose predicate holds.
	MatchAll Match = "all"
)

// DropDefault is the value of routing.default that drops unmatched records
// (counted, never silent).
const DropDefault = "drop"

// Event-time formats.
const (
	TimeEpochMillis = "epoch_ms"
	TimeEpochSecs   = "epoch_s"
	TimeRFC3339     = "rfc3339"
	TimeKafka       = "kafka" // the record's Kafka timestamp
)

// Value modes of a route.
const (
	ValueOriginal   = "original"
	ValueProjection = "projection"
)

// Config is one topology file as written by a user. Load parses and checks
// it; Compile turns it into a Topology the runtime executes. Each field's
// default, type, environment variable and allowed values are declared
// once, in Settings (settings.go); the field comments say what it means.
type Config struct {
	ApplicationID  string    `yaml:"application_id"`
	Brokers        []string  `yaml:"brokers"`
	Guarantee      Guarantee `yaml:"guarantee"`
	CommitInterval Duration  `yaml:"commit_interval"`
	CommitRecords  int       `yaml:"commit_records"`
	// CommitWhenDrained ends an exactly-once transaction before
	// commit_interval when a poll leaves no fetched record unprocessed:
	// a read_committed consumer sees the records sooner.
	// A transaction still lasts at least a tenth of commit_interval.
	CommitWhenDrained *bool         `yaml:"commit_when_drained"`
	Topics            TopicDefaults `yaml:"topics"`
	Inputs            []Input       `yaml:"inputs"`
	EventTime         EventTime     `yaml:"event_time"`
	Routing           Routing       `yaml:"routing"`
	Routes            []Route       `yaml:"routes"`
	Dirty             Dirty         `yaml:"dirty"`
	Shutdown          Duration      `yaml:"shutdown_timeout"`
	Security          Security      `yaml:"security"`
	State             State         `yaml:"state"`
	// Limits bound the records written to every output but dirty.
	Limits OutputLimits `yaml:"limits"`
	// Client bounds the Kafka client's fetch and produce buffers.
	Client Client `yaml:"client"`
	// API secures the HTTP API: authentication, TLS, what samples show.
	API API `yaml:"api"`
	// SchemaRegistry is the registry of the avro, protobuf and
	// json_schema inputs.
	SchemaRegistry SchemaRegistry `yaml:"schema_registry"`
	// Tracing adds OpenTelemetry spans of a sampled share of records.
	Tracing Tracing `yaml:"tracing"`
	// Tables are the lookup tables expressions read (lookup()).
	Tables []Table `yaml:"tables"`

	// src is where the file's values stand, kept by Load so that checks
	// made after the environment overrides (Apply) can still point at
	// FILE:LINE:COL.
	src *source
	// warnings are what Load found that loads but likely does not do
	// what was meant (Warnings).
	warnings []Problem
	// fns are the embedding program's functions (LoadWith), which the
	// plan compiles expressions with.
	fns Functions
	// tableFields are the closed schemas' fields of the tables, by name.
	tableFields map[string]tableFields
}

// Warnings are what the file holds that is valid but likely not what was
// meant (a routing.default no record can reach), each at its line:col.
func (c *Config) Warnings() []Problem { return c.warnings }

// Functions are the Go functions the config was loaded with (LoadWith),
// which its expressions may call.
func (c *Config) Functions() Functions { return c.fns }

// source is a loaded file's name and the positions of its values.
type source struct {
	file string
	pos  map[string]Pos
}

// Security protocols (security.protocol), Kafka's names in lower case.
const (
	ProtocolPlaintext     = "plaintext"
	ProtocolSSL           = "ssl"
	ProtocolSASLPlaintext = "sasl_plaintext"
	ProtocolSASLSSL       = "sasl_ssl"
)

// SASL mechanisms (security.sasl.mechanism).
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
	// SASLOAuthBearer gets a token from an OAuth 2 token endpoint with
	// the client credentials grant (security.sasl.oauth).
	SASLOAuthBearer = "OAUTHBEARER"
	// SASLAWSMSKIAM signs in to Amazon MSK with the AWS credentials of
	// the AWS SDK's default chain (environment, IRSA, profile, EKS Pod
	// Identity, instance profile); sasl_ssl only.
	SASLAWSMSKIAM = "AWS_MSK_IAM"
)

// mechanismNames lists the mechanisms for messages.
const mechanismNames = "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM"

// Security says how every client of the router connects to the brokers.
// Each field can also come from the environment (SIDESTREAM_SECURITY_*,
// SIDESTREAM_TLS_*, SIDESTREAM_SASL_*), which is where the password
// belongs.
type Security struct {
	// Protocol is plaintext, ssl, sasl_plaintext or sasl_ssl.
	Protocol string `yaml:"protocol"`
	TLS      TLS    `yaml:"tls"`
	SASL     SASL   `yaml:"sasl"`
}

// UsesTLS reports whether the protocol encrypts the connection.
func (s Security) UsesTLS() bool {
	return s.Protocol == ProtocolSSL || s.Protocol == ProtocolSASLSSL
}

// UsesSASL reports whether the protocol authenticates with SASL.
func (s Security) UsesSASL() bool {
	return s.Protocol == ProtocolSASLPlaintext || s.Protocol == ProtocolSASLSSL
}

// TLS configures the TLS of the ssl and sasl_ssl protocols. Relative paths
// in the topology file are relative to the file; Load stores them
// resolved.
type TLS struct {
	// CAFile is a PEM file of the CA certificates that sign the brokers'
	// certificates (default: the system's roots).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client's PEM certificate chain and
	// private key, for brokers that require client authentication
	// (ssl.client.auth=required); both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the brokers' certificates must carry
	// (default: the host of each broker address).
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify accepts any broker certificate. For tests only:
	// the router logs a warning at start when it is set.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// set reports whether any TLS field is given.
func (t TLS) set() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// SASL configures the authentication of the sasl_plaintext and sasl_ssl
// protocols.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or
	// AWS_MSK_IAM.
	Mechanism string `yaml:"mechanism"`
	// Username and Password are for PLAIN and SCRAM only.
	Username string `yaml:"username"`
	// Password should come from SIDESTREAM_SASL_PASSWORD (a Kubernetes
	// Secret), not from the file. It never prints.
	Password Secret `yaml:"password"`
	// OAuth is for OAUTHBEARER only.
	OAuth OAuth `yaml:"oauth"`
}

func (s SASL) set() bool {
	return s.Mechanism != "" || s.Username != "" || s.Password != "" || s.OAuth.set()
}

// OAuth configures OAUTHBEARER: the router gets its token from an OAuth 2
// token endpoint with the client credentials grant (RFC 6749 4.4), keeps
// it while it is valid and asks for a new one before it expires; the
// brokers re-authenticate the connections before the session lifetime
// they set ends (KIP-368), with the token of the moment.
type OAuth struct {
	// TokenURL is the token endpoint, https (http only on a loopback
	// host).
	TokenURL string `yaml:"token_url"`
	ClientID string `yaml:"client_id"`
	// ClientSecret comes only from SIDESTREAM_SASL_OAUTH_CLIENT_SECRET:
	// the file may not hold it. It never prints.
	ClientSecret Secret `yaml:"client_secret"`
	// Scopes are asked for in the token request (none by default).
	Scopes []string `yaml:"scopes"`
	// Extensions are the SASL extensions sent with the token (KIP-342),
	// e.g. logicalCluster and identityPoolId for Confluent Cloud.
	Extensions map[string]string `yaml:"extensions"`
}

func (o OAuth) set() bool {
	return o.TokenURL != "" || o.ClientID != "" || o.ClientSecret != "" || len(o.Scopes) > 0 || len(o.Extensions) > 0
}

// Secret is a string that never prints: fmt, slog, JSON, YAML and text
// encoders all see "[redacted]" (or "" when it is empty). Reveal gives
// the value to the one place that needs it, the SASL mechanism.
type Secret string

const redacted = "[redacted]"

func (s Secret) show() string {
	if s == "" {
		return ""
	}
	return redacted
}

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

// String implements fmt.Stringer without the value.
func (s Secret) String() string { return s.show() }

// GoString implements fmt.GoStringer (%#v) without the value.
func (s Secret) GoString() string { return `"` + s.show() + `"` }

// LogValue implements slog.LogValuer without the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.show()) }

// MarshalText implements encoding.TextMarshaler without the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.show()), nil }

// MarshalJSON implements json.Marshaler without the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.show()) }

// TopicDefaults controls how the router creates the topics it needs.
type TopicDefaults struct {
	// Create makes missing output topics at start.
	Create *bool `yaml:"create"`
	// Partitions of created topics.
	Partitions int32 `yaml:"partitions"`
	// ReplicationFactor of created topics (-1: the broker default).
	ReplicationFactor int16 `yaml:"replication_factor"`
	// Configs are topic-level configs for every topic the router creates
	// (retention.ms, cleanup.policy, ...); a route's topic_configs win
	// over them. Repartition topics always get retention.ms=-1,
	// retention.bytes=-1 and cleanup.policy=delete, changelogs
	// cleanup.policy=compact. Existing topics are never altered.
	Configs TopicConfigs `yaml:"configs"`
	// OnRepartitionRetention is what an existing repartition topic with
	// time or size retention does at start: warn (the default: a WARN log
	// and a warning on /readyz) or fail (the router refuses to start).
	OnRepartitionRetention string `yaml:"on_repartition_retention"`
	// RepartitionFormat is how stage one tells stage two what it knows of
	// a record: envelope (the default: one binary header,
	// wire.HeaderRepartition) or headers (the seven text headers of the
	// versions before it, which a stage two of those versions reads: for
	// the first bounce of a rolling upgrade from one of them). Stage two
	// reads both.
	RepartitionFormat string `yaml:"repartition_format"`
	// PurgeInterval is how often the router deletes repartition records
	// below the group's committed offsets.
	PurgeInterval Duration `yaml:"purge_interval"`
}

// Input is one input topic.
type Input struct {
	Topic string `yaml:"topic"`
	// Format is json (the default), avro, protobuf or json_schema (the
	// last three in the Confluent wire format, schemas from
	// schema_registry).
	Format string `yaml:"format"`
	// Schema is the path of a JSON Schema file, relative to the config file.
	Schema string `yaml:"schema"`
	// Start is where a consumer group without committed offsets starts:
	// earliest (the default) or latest.
	Start string `yaml:"start"`
	// OnGap is what happens when records were deleted by the broker
	// before the router read them (retention, DeleteRecords): skip (the
	// default: counted, logged, and the router goes on at the log start)
	// or fail (the task stops, not ready, until offsets are reset).
	OnGap string `yaml:"on_gap"`
}

// EventTime says where a record's event time comes from.
type EventTime struct {
	// Field is a JSON path (gjson syntax, e.g. "ts" or "meta.time").
	Field string `yaml:"field"`
	// Format is epoch_ms, epoch_s, rfc3339 or kafka.
	Format string `yaml:"format"`
	// MaxAhead bounds how far an event time may be ahead of the record's
	// Kafka timestamp (the producer's or the broker's clock at write
	// time, so a replay decides the same way). 0 (the default) is no
	// bound. A clock gone wrong upstream would otherwise drag every
	// window's watermark forward and make the rest of the stream late.
	MaxAhead Span `yaml:"max_ahead"`
	// OnAhead is what happens to an event time beyond MaxAhead: dirty
	// (the default: reason event_time_ahead) or clamp (the event time
	// becomes timestamp + max_ahead; counted).
	OnAhead string `yaml:"on_ahead"`
}

// What happens to an event time beyond event_time.max_ahead.
const (
	AheadDirty = "dirty"
	AheadClamp = "clamp"
)

// Routing says how routes are matched.
type Routing struct {
	Match   Match  `yaml:"match"`
	Default string `yaml:"default"`
}

// Route is a named output: Flink's OutputTag as a Kafka topic.
type Route struct {
	Name  string `yaml:"name"`
	Topic string `yaml:"topic"`
	// TopicFrom computes the topic per record instead (plain routes
	// only): an expression, its allow-list, create or require.
	TopicFrom *TopicFrom `yaml:"topic_from"`
	// When is the predicate; empty means always true.
	When string `yaml:"when"`
	// Key is an expression whose string value becomes the output key;
	// empty keeps the input key.
	Key string `yaml:"key"`
	// Value is original (the input bytes, untouched) or projection.
	Value string `yaml:"value"`
	// Project lists output fields and the expression of each, in order.
	Project Projection `yaml:"project"`
	// Window makes this a window route: matching records are aggregated
	// per group key and event-time window, and the route's topic receives
	// the window results instead of the records.
	Window *Window `yaml:"window"`
	// Format is how the value is written: raw (the input bytes; the
	// default without a projection), json (the projection or the window
	// results; the default with either), connect-json (the same fields
	// in Kafka Connect's schema+payload envelope) or avro (the same typed
	// fields in Avro, their schema registered under <topic>-value).
	Format string `yaml:"format"`
	// Assemble makes this an assembly route: parts from other routes or
	// input topics are joined by ID, and the route's topic receives the
	// assembled records.
	Assemble *Assemble `yaml:"assemble"`
	// Tombstones is what an input tombstone (a keyed record with a null
	// value, a delete on a compacted topic) does for this route: dirty
	// (the default: it cannot be decoded or matched) or forward (written
	// to this route's topic as it came, key and headers, null value, so a
	// delete reaches the sink). Only on plain routes that keep the input
	// key.
	Tombstones string `yaml:"tombstones"`
	// TopicConfigs are topic configs for the route's topic when the
	// router creates it, over topics.configs.
	TopicConfigs TopicConfigs `yaml:"topic_configs"`
	// SLO is the route's objective (window routes: the late share).
	SLO *RouteSLO `yaml:"slo" json:",omitempty"`
	// StateVersion (window and assembly routes) names the route's state:
	// a new value starts the route on new internal topics (their names
	// carry it) with empty state from the inputs' committed offsets.
	// 0, the default, keeps the unversioned names.
	StateVersion int `yaml:"state_version"`
}

// Tombstone handling of a route.
const (
	TombstonesDirty   = "dirty"
	TombstonesForward = "forward"
)

// Window kinds and emission modes.
const (
	WindowTumbling = "tumbling"
	WindowHopping  = "hopping"
	WindowSession  = "session"
	EmitUpdate     = "update"
	EmitFinal      = "final"
	// Watermark kinds of a window route.
	WatermarkAligned = "aligned"
	WatermarkMax     = "max"
)

// Window configures an event-time window route.
type Window struct {
	// Type is tumbling (size), hopping (size, advance) or session (gap).
	Type    string   `yaml:"type"`
	Size    Duration `yaml:"size"`
	Advance Duration `yaml:"advance"`
	Gap     Duration `yaml:"gap"`
	// MaxOutOfOrderness is subtracted from the largest event time seen to
	// give the watermark.
	MaxOutOfOrderness Span `yaml:"max_out_of_orderness"`
	// Grace is the allowed lateness after a window's end.
	Grace Span `yaml:"grace"`
	// IdleTimeout, when set, advances a quiet task's watermark with the
	// wall clock (liveness over determinism; default off).
	IdleTimeout Span `yaml:"idle_timeout"`
	// Watermark is aligned (default: the minimum over input partitions,
	// each record judged late by its own partition's progress, so results
	// do not depend on timing) or max (the largest event time the task has
	// read, as Kafka Streams' stream time: never held by a quiet
	// partition, but which records are late depends on timing).
	Watermark string `yaml:"watermark"`
	// Repartition false says the input is already partitioned by the
	// group key (Kafka's default murmur2 key hash, the same partition
	// count on every input): the window then runs in the input partition's
	// own task, with no repartition topic. A record whose group key
	// belongs to another partition goes to dirty. Default true.
	Repartition *bool `yaml:"repartition"`
	// Emit is update (first result and each late update) or final.
	Emit string `yaml:"emit"`
	// GroupBy is the group key expression (default: the input key).
	GroupBy string `yaml:"group_by"`
	// LateTopic receives records whose every window is already purged.
	LateTopic string `yaml:"late_topic"`
	// LateTopicConfigs are topic configs for the late topic when the
	// router creates it, over topics.configs.
	LateTopicConfigs TopicConfigs `yaml:"late_topic_configs"`
	// Aggregates computed per window, in output order.
	Aggregates []Aggregate `yaml:"aggregates"`
	// Limits bound each task's open windows (default: no bound).
	Limits *Limits `yaml:"limits"`
}

// Aggregate is one aggregation of a window route.
type Aggregate struct {
	Name string `yaml:"name"`
	// Fn is an aggregate function (internal/aggfn names them).
	Fn string `yaml:"fn"`
	// Of is the expression aggregated (count without it counts records).
	Of string `yaml:"of"`
}

// OutputLimits bound what the router writes to its outputs (routes,
// window and assembly repartition topics, late, overflow, incomplete and
// duplicate topics); the dirty topic has its own (Dirty).
type OutputLimits struct {
	// MaxRecordBytes is the largest record written to any output but
	// dirty (default: none here; each output topic's max.message.bytes,
	// read from the broker at start, bounds its records). When set, it
	// caps every output, the topic's own limit still applying when
	// smaller. A record whose output is larger goes to dirty whole, with
	// the limit it hit in its error, and can be redriven.
	MaxRecordBytes int `yaml:"max_record_bytes"`
}

// Dirty is the dirty route: records that fail decode, schema, event time
// or expressions, with their original bytes and reason headers.
type Dirty struct {
	Topic string `yaml:"topic"`
	// MaxRecordBytes is the largest record written to the dirty topic
	// as-is (under the broker's message.max.bytes; keep it under the
	// dirty topic's max.message.bytes: router run warns when it is not);
	// a larger dirty record is cut (TruncateTo). It bounds no other
	// output (Limits).
	MaxRecordBytes int `yaml:"max_record_bytes"`
	// TruncateTo is the size a too-large payload is cut to on the dirty
	// route.
	TruncateTo int `yaml:"truncate_to"`
	// TopicConfigs are topic configs for the dirty topic when the router
	// creates it, over topics.configs.
	TopicConfigs TopicConfigs `yaml:"topic_configs"`
	// SLO is the dirty route's objective: the dirty share of the inputs.
	SLO *DirtySLO `yaml:"slo" json:",omitempty"`
}

// Field is one projected output field.
type Field struct {
	Name string
	Expr string
}

// Projection is an ordered mapping of output field name to expression.
type Projection []Field

// Span is a duration that may be zero ("0s"), such as a grace period.
type Span time.Duration

// D returns the span as a time.Duration.
func (d Span) D() time.Duration { return time.Duration(d) }

// Duration is a time.Duration written as "100ms", "5s".
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Defaults.
const (
	DefaultCommitInterval = 100 * time.Millisecond
	DefaultCommitRecords  = 50000
	DefaultPartitions     = 6
	DefaultMaxRecordBytes = 1000000
	DefaultTruncateTo     = 65536
	DefaultShutdown       = 30 * time.Second
)

// applyDefaults sets what the file leaves unset: every default Settings
// states as a value (applySpecDefaults), then the ones that depend on
// other settings (a Rule in Settings), computed here.
func (c *Config) applyDefaults() {
	c.applySpecDefaults("")
	if c.EventTime.Format == "" {
		c.EventTime.Format = TimeKafka
		if c.EventTime.Field != "" {
			c.EventTime.Format = TimeEpochMillis
		}
	}
	for i := range c.Routes {
		c.Routes[i].applyDefaults()
	}
	if c.Dirty.TruncateTo == 0 {
		// A small max_record_bytes must not make the default truncation
		// invalid: the user never wrote truncate_to.
		c.Dirty.TruncateTo = min(DefaultTruncateTo, max(c.Dirty.MaxRecordBytes-1024, 1))
	}
	if c.Client.MaxBufferedBytes == 0 {
		// limits.max_record_bytes has no default: 0 is each output
		// topic's max.message.bytes, read from the broker at start.
		c.Client.MaxBufferedBytes = max(DefaultMaxBufferedBytes, 2*max(c.Dirty.MaxRecordBytes, c.Limits.MaxRecordBytes))
	}
}

// applyDefaults fills a route's value (the input, or the projection when
// project is set) and its format (raw for the input's bytes, json for
// what the router writes itself).
func (r *Route) applyDefaults() {
	if r.Value == "" {
		r.Value = ValueOriginal
		if len(r.Project) > 0 {
			r.Value = ValueProjection
		}
	}
	if r.Format == "" {
		r.Format = OutputRaw
		if r.Window != nil || r.Assemble != nil || r.Value == ValueProjection {
			r.Format = OutputJSON
		}
	}
}
