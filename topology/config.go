package topology

import "time"

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
// it; Compile turns it into a Topology the runtime executes.
type Config struct {
	ApplicationID  string        `yaml:"application_id"`
	Brokers        []string      `yaml:"brokers"`
	Guarantee      Guarantee     `yaml:"guarantee"`
	CommitInterval Duration      `yaml:"commit_interval"`
	CommitRecords  int           `yaml:"commit_records"`
	Topics         TopicDefaults `yaml:"topics"`
	Inputs         []Input       `yaml:"inputs"`
	EventTime      EventTime     `yaml:"event_time"`
	Routing        Routing       `yaml:"routing"`
	Routes         []Route       `yaml:"routes"`
	Dirty          Dirty         `yaml:"dirty"`
	Shutdown       Duration      `yaml:"shutdown_timeout"`
}

// TopicDefaults controls how the router creates the topics it needs.
type TopicDefaults struct {
	// Create makes missing output topics at start (default true).
	Create *bool `yaml:"create"`
	// Partitions of created topics (default 6).
	Partitions int32 `yaml:"partitions"`
	// ReplicationFactor of created topics (default -1: the broker default).
	ReplicationFactor int16 `yaml:"replication_factor"`
}

// Input is one input topic.
type Input struct {
	Topic  string `yaml:"topic"`
	Format string `yaml:"format"`
	// Schema is the path of a JSON Schema file, relative to the config file.
	Schema string `yaml:"schema"`
}

// EventTime says where a record's event time comes from.
type EventTime struct {
	// Field is a JSON path (gjson syntax, e.g. "ts" or "meta.time").
	Field string `yaml:"field"`
	// Format is epoch_ms, epoch_s, rfc3339 or kafka.
	Format string `yaml:"format"`
}

// Routing says how routes are matched.
type Routing struct {
	Match   Match  `yaml:"match"`
	Default string `yaml:"default"`
}

// Route is a named output: Flink's OutputTag as a Kafka topic.
type Route struct {
	Name  string `yaml:"name"`
	Topic string `yaml:"topic"`
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
}

// Window kinds and emission modes.
const (
	WindowTumbling = "tumbling"
	WindowHopping  = "hopping"
	WindowSession  = "session"
	EmitUpdate     = "update"
	EmitFinal      = "final"
)

// Window configures an event-time window route.
type Window struct {
	// Type is tumbling (size), hopping (size, advance) or session (gap).
	Type    string   `yaml:"type"`
	Size    Duration `yaml:"size"`
	Advance Duration `yaml:"advance"`
	Gap     Duration `yaml:"gap"`
	// MaxOutOfOrderness is subtracted from the largest event time seen to
	// give the watermark (default 0).
	MaxOutOfOrderness Span `yaml:"max_out_of_orderness"`
	// Grace is the allowed lateness after a window's end (default 0).
	Grace Span `yaml:"grace"`
	// IdleTimeout, when set, advances a quiet task's watermark with the
	// wall clock (liveness over determinism; default off).
	IdleTimeout Span `yaml:"idle_timeout"`
	// Emit is update (first result and each late update) or final.
	Emit string `yaml:"emit"`
	// GroupBy is the group key expression (default: the input key).
	GroupBy string `yaml:"group_by"`
	// LateTopic receives records whose every window is already purged.
	LateTopic string `yaml:"late_topic"`
	// Aggregates computed per window, in output order.
	Aggregates []Aggregate `yaml:"aggregates"`
}

// Aggregate is one aggregation of a window route.
type Aggregate struct {
	Name string `yaml:"name"`
	// Fn is count, sum, min, max, avg, first, last or distinct_count.
	Fn string `yaml:"fn"`
	// Of is the expression aggregated (count without it counts records).
	Of string `yaml:"of"`
}

// Dirty is the dirty route: records that fail decode, schema, event time
// or expressions, with their original bytes and reason headers.
type Dirty struct {
	Topic string `yaml:"topic"`
	// MaxRecordBytes is the largest record the router writes as-is
	// (default 1000000, under the broker's default message.max.bytes).
	MaxRecordBytes int `yaml:"max_record_bytes"`
	// TruncateTo is the size a too-large payload is cut to on the dirty
	// route (default 65536).
	TruncateTo int `yaml:"truncate_to"`
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

func (c *Config) applyDefaults() {
	if c.Guarantee == "" {
		c.Guarantee = ExactlyOnce
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = Duration(DefaultCommitInterval)
	}
	if c.CommitRecords == 0 {
		c.CommitRecords = DefaultCommitRecords
	}
	if c.Topics.Create == nil {
		t := true
		c.Topics.Create = &t
	}
	if c.Topics.Partitions == 0 {
		c.Topics.Partitions = DefaultPartitions
	}
	if c.Topics.ReplicationFactor == 0 {
		c.Topics.ReplicationFactor = -1
	}
	for i := range c.Inputs {
		if c.Inputs[i].Format == "" {
			c.Inputs[i].Format = "json"
		}
	}
	if c.EventTime.Format == "" {
		if c.EventTime.Field == "" {
			c.EventTime.Format = TimeKafka
		} else {
			c.EventTime.Format = TimeEpochMillis
		}
	}
	if c.Routing.Match == "" {
		c.Routing.Match = MatchFirst
	}
	for i := range c.Routes {
		if w := c.Routes[i].Window; w != nil && w.Emit == "" {
			w.Emit = EmitUpdate
		}
		if c.Routes[i].Value == "" {
			if len(c.Routes[i].Project) > 0 {
				c.Routes[i].Value = ValueProjection
			} else {
				c.Routes[i].Value = ValueOriginal
			}
		}
	}
	if c.Dirty.MaxRecordBytes == 0 {
		c.Dirty.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if c.Dirty.TruncateTo == 0 {
		// A small max_record_bytes must not make the default truncation
		// invalid: the user never wrote truncate_to.
		c.Dirty.TruncateTo = min(DefaultTruncateTo, max(c.Dirty.MaxRecordBytes-1024, 1))
	}
	if c.Shutdown == 0 {
		c.Shutdown = Duration(DefaultShutdown)
	}
}
