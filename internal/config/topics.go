package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// TopicConfigs are Kafka topic-level configs (retention.ms,
// cleanup.policy, ...) the router sets on a topic it creates. A topic
// that already exists is never altered.
type TopicConfigs map[string]string

// Where a new consumer group starts on an input (inputs[].start).
const (
	StartEarliest = "earliest"
	StartLatest   = "latest"
)

// What a gap in an input does (inputs[].on_gap): records deleted by the
// broker before the router read them.
const (
	GapSkip = "skip"
	GapFail = "fail"
)

// What an existing repartition topic with time or size retention does
// (topics.on_repartition_retention).
const (
	RetentionWarn = "warn"
	RetentionFail = "fail"
)

// DefaultPurgeInterval is how often repartition topics are purged below
// the group's committed offsets (topics.purge_interval).
const DefaultPurgeInterval = 30 * time.Second

// topicConfigKind says how a known topic config's value is checked.
type topicConfigKind int

const (
	tcInt           topicConfigKind = iota // an integer >= -1 (-1: unlimited, where Kafka allows it)
	tcPositive                             // an integer >= 1
	tcNonNeg                               // an integer >= 0
	tcRatio                                // a number in [0, 1]
	tcBool                                 // true or false
	tcCleanup                              // delete, compact or both
	tcCompression                          // a compression.type
	tcTimestampType                        // CreateTime or LogAppendTime
	tcString                               // anything non-empty
)

// knownTopicConfigs are Kafka's topic-level configs (Kafka 4). A key
// outside this list is refused: a misspelt one would be accepted by the
// broker only to fail the topic's creation at run time.
var knownTopicConfigs = map[string]topicConfigKind{
	"cleanup.policy":                          tcCleanup,
	"compression.type":                        tcCompression,
	"compression.gzip.level":                  tcInt,
	"compression.lz4.level":                   tcInt,
	"compression.zstd.level":                  tcInt,
	"delete.retention.ms":                     tcNonNeg,
	"file.delete.delay.ms":                    tcNonNeg,
	"flush.messages":                          tcPositive,
	"flush.ms":                                tcNonNeg,
	"follower.replication.throttled.replicas": tcString,
	"index.interval.bytes":                    tcNonNeg,
	"leader.replication.throttled.replicas":   tcString,
	"local.retention.bytes":                   tcInt,
	"local.retention.ms":                      tcInt,
	"max.compaction.lag.ms":                   tcPositive,
	"max.message.bytes":                       tcNonNeg,
	"message.timestamp.after.max.ms":          tcNonNeg,
	"message.timestamp.before.max.ms":         tcNonNeg,
	"message.timestamp.type":                  tcTimestampType,
	"min.cleanable.dirty.ratio":               tcRatio,
	"min.compaction.lag.ms":                   tcNonNeg,
	"min.insync.replicas":                     tcPositive,
	"preallocate":                             tcBool,
	"remote.storage.enable":                   tcBool,
	"retention.bytes":                         tcInt,
	"retention.ms":                            tcInt,
	"segment.bytes":                           tcPositive,
	"segment.index.bytes":                     tcPositive,
	"segment.jitter.ms":                       tcNonNeg,
	"segment.ms":                              tcPositive,
	"unclean.leader.election.enable":          tcBool,
}

// checkTopicConfig returns why value is not valid for key, or "".
func checkTopicConfig(key, value string) string {
	kind, ok := knownTopicConfigs[key]
	if !ok {
		keys := map[string]int{}
		for k := range knownTopicConfigs {
			keys[k] = 0
		}
		return fmt.Sprintf("unknown topic config %q%s", key, suggest(key, keys))
	}
	intAtLeast := func(lo int64) string {
		n, err := strconv.ParseInt(value, 10, 64)
		switch {
		case err != nil:
			return fmt.Sprintf("%s must be an integer, got %q", key, value)
		case n < lo:
			return fmt.Sprintf("%s must be at least %d, got %d", key, lo, n)
		}
		return ""
	}
	switch kind {
	case tcInt:
		return intAtLeast(-1)
	case tcPositive:
		return intAtLeast(1)
	case tcNonNeg:
		return intAtLeast(0)
	case tcRatio:
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || f < 0 || f > 1 {
			return fmt.Sprintf("%s must be a number from 0 to 1, got %q", key, value)
		}
	case tcBool:
		if value != "true" && value != "false" {
			return fmt.Sprintf("%s must be true or false, got %q", key, value)
		}
	case tcCleanup:
		parts := strings.Split(strings.ReplaceAll(value, " ", ""), ",")
		sort.Strings(parts)
		if v := strings.Join(parts, ","); v != "compact" && v != "delete" && v != "compact,delete" {
			return fmt.Sprintf("%s must be delete, compact or \"compact,delete\", got %q", key, value)
		}
	case tcCompression:
		switch value {
		case "uncompressed", "zstd", "lz4", "snappy", "gzip", "producer":
		default:
			return fmt.Sprintf("%s must be one of uncompressed, zstd, lz4, snappy, gzip, producer; got %q", key, value)
		}
	case tcTimestampType:
		if value != "CreateTime" && value != "LogAppendTime" {
			return fmt.Sprintf("%s must be CreateTime or LogAppendTime, got %q", key, value)
		}
	case tcString:
		if value == "" {
			return fmt.Sprintf("%s must not be empty", key)
		}
	}
	return ""
}

// validateTopicConfigs checks one configs map written at path.
func (d *doc) validateTopicConfigs(path string, tc TopicConfigs) {
	keys := make([]string, 0, len(tc))
	for k := range tc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if why := checkTopicConfig(k, tc[k]); why != "" {
			d.at(fieldPath(path, k), "%s: %s", path, why)
		}
	}
}

// The values of topics.repartition_format.
const (
	RepartitionEnvelope = "envelope"
	RepartitionHeaders  = "headers"
)

// validateTopics checks the topics section and the inputs' start and
// on_gap.
func (d *doc) validateTopics() {
	c := &d.cfg
	d.validateTopicConfigs("topics.configs", c.Topics.Configs)
	switch c.Topics.OnRepartitionRetention {
	case RetentionWarn, RetentionFail:
	default:
		d.at("topics.on_repartition_retention", "topics.on_repartition_retention must be %q or %q, got %q", RetentionWarn, RetentionFail, c.Topics.OnRepartitionRetention)
	}
	switch c.Topics.RepartitionFormat {
	case RepartitionEnvelope, RepartitionHeaders:
	default:
		d.at("topics.repartition_format", "topics.repartition_format must be %q or %q, got %q", RepartitionEnvelope, RepartitionHeaders, c.Topics.RepartitionFormat)
	}
	if c.Topics.PurgeInterval.D() < time.Second {
		d.at("topics.purge_interval", "topics.purge_interval must be at least 1s (each purge asks the brokers for the group's offsets), got %s", c.Topics.PurgeInterval.D())
	}
	for i, in := range c.Inputs {
		p := fmt.Sprintf("inputs[%d]", i)
		if in.Start != StartEarliest && in.Start != StartLatest {
			d.at(p+".start", "%s.start must be %q or %q, got %q", p, StartEarliest, StartLatest, in.Start)
		}
		if in.OnGap != GapSkip && in.OnGap != GapFail {
			d.at(p+".on_gap", "%s.on_gap must be %q or %q, got %q", p, GapSkip, GapFail, in.OnGap)
		}
	}
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		d.validateTopicConfigs(p+".topic_configs", r.TopicConfigs)
		if r.Window != nil {
			d.validateTopicConfigs(p+".window.late_topic_configs", r.Window.LateTopicConfigs)
		}
	}
	d.validateTopicConfigs("dirty.topic_configs", c.Dirty.TopicConfigs)
}

func (c *Config) applyTopicDefaults() {
	if c.Topics.OnRepartitionRetention == "" {
		c.Topics.OnRepartitionRetention = RetentionWarn
	}
	if c.Topics.PurgeInterval == 0 {
		c.Topics.PurgeInterval = Duration(DefaultPurgeInterval)
	}
	if c.Topics.RepartitionFormat == "" {
		c.Topics.RepartitionFormat = RepartitionEnvelope
	}
	for i := range c.Inputs {
		if c.Inputs[i].Start == "" {
			c.Inputs[i].Start = StartEarliest
		}
		if c.Inputs[i].OnGap == "" {
			c.Inputs[i].OnGap = GapSkip
		}
	}
}

// Repartition and changelog topic configs the router always sets, over
// topics.configs: a repartition topic is never expired by time or size
// (the router deletes what the group committed; records of a replay
// carry old timestamps a time retention would delete before they are
// read), a changelog is compacted.
var (
	repartitionConfigs = map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
	changelogConfigs   = map[string]string{"cleanup.policy": "compact"}
)

// decodeTopicConfigs reads a mapping of config name to scalar value (a
// number, a boolean or a string: Kafka takes them all as strings).
func (d *doc) decodeTopicConfigs(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errAt(Pos{n.Line, n.Column}, "%s: expected a mapping of topic config to value, got %s", path, kindName(n))
		return
	}
	tc := TopicConfigs{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!null" || k.Value == "" {
			d.errAt(Pos{k.Line, k.Column}, "%s: a topic config name must be a non-empty string, got %s", path, kindName(k))
			continue
		}
		p := fieldPath(path, k.Value)
		if _, dup := tc[k.Value]; dup {
			d.errAt(Pos{k.Line, k.Column}, "%s: topic config %q is given twice", path, k.Value)
			continue
		}
		d.pos[p] = Pos{val.Line, val.Column}
		d.nodes[p] = val
		if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
			d.errAt(Pos{val.Line, val.Column}, "%s: expected a value (a number, true/false or a string), got %s", p, kindName(val))
			continue
		}
		tc[k.Value] = val.Value
	}
	v.Set(reflect.ValueOf(tc))
}
