package config

import (
	"strconv"
	"time"

	"github.com/sidestream/sidestream/internal/aggfn"
)

// Setting is one setting of the router, declared once in Settings: where
// it stands in the topology file, its type and default, the environment
// variable and flag that override it, a line of documentation and its
// allowed values. Load applies the defaults from it (applySpecDefaults),
// the environment overrides and `router run`'s unknown-variable warning
// take their variable names from it (EnvNames, sectionEnv), and
// docs/reference/config.md is generated from it (ReferencePage). The
// tests in settings_test.go fail when the Config struct, the defaults
// applied, the variables read or the page disagree with it.
type Setting struct {
	// Path is the setting's YAML path: "client.metadata_min_age", list
	// items as "routes[].window.size". "" for a setting of the process,
	// not of the file (Flag and Env name it).
	Path string
	// Type is the value's type as the page names it (string, int, bool,
	// duration, "duration, 0 allowed", secret, list, map, section ...).
	Type string
	// Default is the value an unset setting takes, as YAML writes it; ""
	// when it has none. Load sets it unless Rule is given.
	Default string
	// Rule, when the default depends on other settings, says how (the
	// page shows it); applyDefaults computes it, and Default is then its
	// value in a file that sets nothing else.
	Rule string
	// OnRead: Load leaves the setting unset (an explicit 0s differs
	// from none) and its reader applies Default (the ...OrDefault
	// methods).
	OnRead bool
	// Required: the file (or an override) must give it.
	Required bool
	// Env and Flag are the environment variable and `router run` flag
	// that override it ("" for none).
	Env  string
	Flag string
	// Command is the subcommand whose flag Flag is, when not `run`.
	Command string
	// Doc is one line for the reference page.
	Doc string
	// Notes, when one line is not enough, say more; the page prints
	// them below the tables.
	Notes string
	// Enum lists the allowed values of a string setting (validation
	// refuses others; a test holds it to that).
	Enum []string
	// Min and Max bound a number or duration, as YAML writes it ("" for
	// no bound); validation refuses a value outside, a test holds it.
	Min, Max string
}

// The environment variables of the process and of the top-level
// overrides (the sections' own stand with their sections).
const (
	EnvConfig           = "SIDESTREAM_CONFIG"
	EnvBrokers          = "SIDESTREAM_BROKERS"
	EnvApplicationID    = "SIDESTREAM_APPLICATION_ID"
	EnvGuarantee        = "SIDESTREAM_GUARANTEE"
	EnvCommitInterval   = "SIDESTREAM_COMMIT_INTERVAL"
	EnvListen           = "SIDESTREAM_LISTEN"
	EnvInstanceID       = "SIDESTREAM_INSTANCE_ID"
	EnvOwnerURLTemplate = "SIDESTREAM_OWNER_URL_TEMPLATE"
	EnvStaticMembership = "SIDESTREAM_STATIC_MEMBERSHIP"
	EnvWatch            = "SIDESTREAM_WATCH"
	EnvLogLevel         = "SIDESTREAM_LOG_LEVEL"
	EnvLogFormat        = "SIDESTREAM_LOG_FORMAT"
	EnvAuditMySQLDSN    = "SIDESTREAM_AUDIT_MYSQL_DSN"
)

// Types as the reference page names them.
const (
	tString   = "string"
	tInt      = "int"
	tBool     = "bool"
	tDuration = "duration"
	tSpan     = "duration, 0 allowed"
	tSecret   = "secret"
	tList     = "list of strings"
	tMap      = "map"
	tConfigs  = "topic configs"
	tProject  = "mapping"
	tSection  = "section"
	tNumber   = "number"
	tItems    = "list of sections"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func dur(d time.Duration) string { return d.String() }

// Settings is every setting, in the order of the topology file's model
// (the Config struct), then the process's own.
var Settings = concat(
	[]Setting{
		{Path: "application_id", Type: tString, Required: true, Env: EnvApplicationID, Flag: "--application-id", Doc: "consumer group id, transactional id prefix, prefix of internal topics; letters, digits, `.`, `_`, `-`"},
		{Path: "brokers", Type: tList, Env: EnvBrokers, Flag: "--brokers", Doc: "`host:port` list; required at run time (file, variable or flag)"},
		{Path: "guarantee", Type: tString, Default: string(ExactlyOnce), Env: EnvGuarantee, Flag: "--guarantee", Enum: []string{string(ExactlyOnce), string(AtLeastOnce)}, Doc: "one transaction per commit, or an idempotent producer with offsets committed after the outputs are acknowledged"},
		{Path: "commit_interval", Type: tDuration, Default: dur(DefaultCommitInterval), Env: EnvCommitInterval, Flag: "--commit-interval", Doc: "how often a transaction (or an offset commit) ends"},
		{Path: "commit_records", Type: tInt, Default: itoa(DefaultCommitRecords), Min: "1", Doc: "end the transaction early after this many input records"},
		{Path: "commit_when_drained", Type: tBool, Default: "true", Doc: "exactly-once: end a transaction early once a poll leaves nothing unprocessed (at least a tenth of `commit_interval`)", Notes: "exactly-once: end the transaction before `commit_interval` once a poll leaves no fetched record unprocessed (at the earliest a tenth of `commit_interval`, at most 10 ms, after it began, and never sooner than four times as long as the last commit took, so a router faster than its fetches spends at most about a fifth of its time committing), so a `read_committed` reader sees records sooner when the router keeps up; `false` keeps every transaction to the full interval (fewer transactions at low load)"},
		{Path: "topics", Type: tSection, Doc: "how the router creates the topics it needs"},
		{Path: "topics.create", Type: tBool, Default: "true", Doc: "create missing output topics at start (inputs are never created)"},
		{Path: "topics.partitions", Type: tInt, Default: itoa(DefaultPartitions), Min: "1", Doc: "partitions of created topics"},
		{Path: "topics.replication_factor", Type: tInt, Default: "-1", Doc: "replication of created topics; -1 is the broker's default"},
		{Path: "topics.configs", Type: tConfigs, Doc: "Kafka topic configs of every created topic (checked by name and value); never applied to an existing topic", Notes: "topic-level configs (`retention.ms`, `cleanup.policy`, `min.insync.replicas`, …; Kafka's names, numbers or strings) for every topic the router creates; each name and value is checked by `router validate`. Applied at creation only: an existing topic is never altered. Repartition topics always get `retention.ms=-1`, `retention.bytes=-1`, `cleanup.policy=delete`, changelogs `cleanup.policy=compact`, over these"},
		{Path: "topics.on_repartition_retention", Type: tString, Default: RetentionWarn, Enum: []string{RetentionWarn, RetentionFail}, Doc: "an existing repartition topic that expires records: a WARN and a `/readyz` warning, or refuse to start", Notes: "an existing repartition topic that expires records (`retention.ms` or `retention.bytes` other than `-1`, or a compacting `cleanup.policy`): `warn` (a WARN at start and a `warning:` on `/readyz`, which stays 200) or `fail` (the router refuses to start). See [Replaying old data](../replay.md#replaying-old-data)"},
		{Path: "topics.repartition_format", Type: tString, Default: RepartitionEnvelope, Enum: []string{RepartitionEnvelope, RepartitionHeaders}, Doc: "what stage one writes for stage two: one binary header, or the older seven text headers (rolling upgrades)", Notes: "what stage one writes on a repartition record for stage two: `envelope` (one binary header, `sidestream.r`) or `headers` (the seven text headers of the versions before it, for the first bounce of a rolling upgrade from one of them; see [Event-time windows](../windows.md#event-time-windows-allowed-lateness-and-the-late-route)). Stage two reads both"},
		{Path: "topics.purge_interval", Type: tDuration, Default: dur(DefaultPurgeInterval), Min: "1s", Doc: "how often repartition records below the committed offsets are deleted; at least 1s"},
		{Path: "inputs", Type: tItems, Required: true, Doc: "the input topics"},
		{Path: "inputs[].topic", Type: tString, Required: true, Doc: "an input topic; it must exist"},
		{Path: "inputs[].format", Type: tString, Default: InputJSON, Enum: []string{InputJSON, InputAvro, InputProtobuf, InputJSONSchema}, Doc: "a JSON object per record, or the Confluent wire format decoded with the writer schema from `schema_registry`", Notes: "the input format: `json` (a JSON object per record), or `avro`, `protobuf`, `json_schema` in the Confluent wire format, decoded with their writer schema from `schema_registry` (see [Avro, Protobuf and JSON Schema inputs](../input-formats.md#avro-protobuf-and-json-schema-inputs))"},
		{Path: "inputs[].schema", Type: tString, Doc: "a JSON Schema file (relative to the topology file) every record must satisfy; `json` inputs only", Notes: "path (relative to the topology file) of a JSON Schema (draft 4 to 2020-12) every record must satisfy, else dirty with stage `schema` ; `json` inputs only (a registry format's schema is the writer's). A schema of the common keywords is decided without a second decode (see [How a JSON Schema is checked](../running.md#how-a-json-schema-is-checked))"},
		{Path: "inputs[].start", Type: tString, Default: StartEarliest, Enum: []string{StartEarliest, StartLatest}, Doc: "where a group without committed offsets starts; a committed offset always wins", Notes: "where a consumer group without committed offsets starts on this input: `earliest` (the log start) or `latest` (the log end: only what comes after the first join). A committed offset always wins"},
		{Path: "inputs[].on_gap", Type: tString, Default: GapSkip, Enum: []string{GapSkip, GapFail}, Doc: "records the broker deleted before the router read them: counted and skipped, or the task stops", Notes: "what records the broker deleted before the router read them do (retention ran ahead of a stopped or slow router, `DeleteRecords`): `skip` (counted exactly in `sidestream_input_records_lost_total`, one ERROR with the range, shown in `/tasks`; the router goes on at the log start) or `fail` (the task stops, `/readyz` 503 names the partition and the range, until the offsets are moved with `router reset` or the policy is `skip`). A repartition topic follows `fail` when any input does. See [Replaying old data](../replay.md#replaying-old-data)"},
		{Path: "event_time", Type: tSection, Doc: "where a record's event time comes from"},
		{Path: "event_time.field", Type: tString, Doc: "JSON path of the event time (gjson syntax: `ts`, `meta.time`)"},
		{Path: "event_time.format", Type: tString, Default: TimeKafka, Rule: "`epoch_ms` with a field, else `kafka`", Enum: []string{TimeEpochMillis, TimeEpochSecs, TimeRFC3339, TimeKafka}, Doc: "how the field is read; `kafka` is the record's timestamp"},
		{Path: "event_time.max_ahead", Type: tSpan, Default: "0s", Doc: "how far an event time may be ahead of the record's Kafka timestamp; 0s is no bound", Notes: "how far an event time may be ahead of the record's Kafka timestamp; a producer clock gone wrong would otherwise drag every window's watermark forward. The record timestamp (not the router's clock) is the reference, so a replay decides the same way; it is itself bounded by the broker's wall clock: Kafka 4 refuses a record whose CreateTime is more than `log.message.timestamp.after.max.ms` (1 h by default) ahead of it, and `message.timestamp.type=LogAppendTime` makes it the broker's clock. So an event time is at most `max_ahead` + 1 h ahead of the wall clock at append"},
		{Path: "event_time.on_ahead", Type: tString, Default: AheadDirty, Enum: []string{AheadDirty, AheadClamp}, Doc: "an event time beyond `max_ahead`: dirty (`event_time_ahead`), or clamped to timestamp + `max_ahead`", Notes: "beyond `max_ahead`: `dirty` (reason `event_time_ahead`) or `clamp` (the event time becomes timestamp + `max_ahead`; counted in `sidestream_event_time_clamped_total`)"},
		{Path: "routing", Type: tSection, Doc: "how routes are matched"},
		{Path: "routing.match", Type: tString, Default: string(MatchFirst), Enum: []string{string(MatchFirst), string(MatchAll)}, Doc: "the first route whose `when` holds, or every one (fan-out)"},
		{Path: "routing.default", Type: tString, Required: true, Doc: "the route of records no predicate matched, or `drop` (counted)"},
		{Path: "routes", Type: tItems, Required: true, Doc: "the named outputs"},
		{Path: "routes[].name", Type: tString, Required: true, Doc: "lower-case, unique; `dirty` and `drop` are reserved"},
		{Path: "routes[].topic", Type: tString, Doc: "the output topic; unique across routes, dirty and inputs; required unless `topic_from` is given"},
		{Path: "routes[].topic_from", Type: tSection, Doc: "plain routes: the topic computed per record, instead of `topic`", Notes: "plain routes: the topic computed from each record instead of a fixed `topic`, with a required allow-list; a computed name that is not a valid topic name, not allowed, or missing under `require` sends its record to dirty (reasons `topic_invalid`, `topic_not_allowed`, `topic_missing`, `topic_create_refused`); see [Topics chosen per record](../configuration.md#topics-chosen-per-record)"},
		{Path: "routes[].topic_from.expr", Type: tString, Required: true, Doc: "an expression over the record that yields the topic's name (a string)"},
		{Path: "routes[].topic_from.allow", Type: tList, Doc: "globs (`*`, `?`, `[a-z]`) of the names it may yield; this or `allow_regex` is required"},
		{Path: "routes[].topic_from.allow_regex", Type: tString, Doc: "a regular expression (RE2) the whole name must match, beside `allow`"},
		{Path: "routes[].topic_from.missing", Type: tString, Default: MissingRequire, Enum: []string{MissingCreate, MissingRequire}, Doc: "a name that does not exist: `create` it with the route's topic settings, or `require` it (its record goes to dirty)"},
		{Path: "routes[].when", Type: tString, Doc: "the predicate, an expr-lang expression returning bool; empty is always"},
		{Path: "routes[].key", Type: tString, Doc: "expression of the output key; empty keeps the input key"},
		{Path: "routes[].value", Type: tString, Default: ValueOriginal, Rule: "`projection` with `project`, else `original`", Enum: []string{ValueOriginal, ValueProjection}, Doc: "the input bytes unchanged, or a JSON object built from `project`"},
		{Path: "routes[].project", Type: tProject, Doc: "output field to expression, written in order"},
		{Path: "routes[].window", Type: tSection, Doc: "makes the route an event-time window: results per group key and window"},
		{Path: "routes[].window.type", Type: tString, Required: true, Enum: []string{WindowTumbling, WindowHopping, WindowSession}, Doc: "tumbling (size), hopping (size, advance) or session (gap)"},
		{Path: "routes[].window.size", Type: tDuration, Doc: "tumbling and hopping: the window's length"},
		{Path: "routes[].window.advance", Type: tDuration, Doc: "hopping: how far each window starts after the last"},
		{Path: "routes[].window.gap", Type: tDuration, Doc: "session: the inactivity that closes a session"},
		{Path: "routes[].window.max_out_of_orderness", Type: tSpan, Default: "0s", Doc: "subtracted from the largest event time to give the watermark"},
		{Path: "routes[].window.grace", Type: tSpan, Default: "0s", Doc: "allowed lateness after a window's end"},
		{Path: "routes[].window.idle_timeout", Type: tSpan, Default: "0s", Doc: "advance a quiet task's watermark with the wall clock; 0s is off"},
		{Path: "routes[].window.watermark", Type: tString, Default: WatermarkAligned, Enum: []string{WatermarkAligned, WatermarkMax}, Doc: "the minimum over input partitions (deterministic), or the largest event time read"},
		{Path: "routes[].window.repartition", Type: tBool, Default: "true", Doc: "false: the input is already partitioned by the group key; no repartition topic"},
		{Path: "routes[].window.emit", Type: tString, Default: EmitUpdate, Enum: []string{EmitUpdate, EmitFinal}, Doc: "the first result and each late update, or only the final result"},
		{Path: "routes[].window.group_by", Type: tString, Doc: "the group key expression; empty is the input key"},
		{Path: "routes[].window.late_topic", Type: tString, Required: true, Doc: "receives records whose every window is already purged"},
		{Path: "routes[].window.late_topic_configs", Type: tConfigs, Doc: "topic configs of the late topic when created, over `topics.configs`"},
		{Path: "routes[].window.aggregates", Type: tItems, Required: true, Doc: "the aggregates of each window, in output order"},
		{Path: "routes[].window.aggregates[].name", Type: tString, Required: true, Doc: "the result field's name"},
		{Path: "routes[].window.aggregates[].fn", Type: tString, Required: true, Enum: aggfn.Names, Doc: "the aggregate function"},
		{Path: "routes[].window.aggregates[].of", Type: tString, Doc: "the expression aggregated; count without it counts records"},
	},
	limitsSettings("routes[].window", "windows (sessions)", "; at least the windows one record opens (hopping: size/advance)"),
	[]Setting{
		{Path: "routes[].format", Type: tString, Default: OutputRaw, Rule: "`json` with `project`, `window` or `assemble`, else `raw`", Enum: []string{OutputRaw, OutputJSON, OutputConnectJSON, OutputAvro}, Doc: "how the value is written; `avro` registers its schema under `<topic>-value`", Notes: "how the value is written: `raw` the input bytes untouched; `json` the projection (or the window results) as a JSON object; `connect-json` the same fields in Kafka Connect's JsonConverter envelope `{\"schema\":...,\"payload\":...}` for sinks that need a schema (JDBC), see [`format: connect-json`](../handoff.md#format-connect-json); `avro` the same typed fields as Avro binary in the Confluent wire format, the record schema registered under `<topic>-value` at start (needs `schema_registry.url`), see [Avro outputs](../input-formats.md#avro-outputs). Assembly routes write `json` only. Keys are always plain strings"},
		{Path: "routes[].assemble", Type: tSection, Doc: "makes the route an assembly: parts joined by ID", Notes: "makes the route an assembly: parts joined by ID, TTL, incomplete and duplicate routes (see [Join-assembly](../assembly.md#join-assembly-by-id-parts-ttl-and-the-incomplete-route))"},
		{Path: "routes[].assemble.id", Type: tString, Doc: "the ID expression of every part that sets none"},
		{Path: "routes[].assemble.parts", Type: tItems, Required: true, Doc: "the parts, in the order of the assembled value"},
		{Path: "routes[].assemble.parts[].name", Type: tString, Required: true, Doc: "the part's name in the assembled value"},
		{Path: "routes[].assemble.parts[].source", Type: tString, Required: true, Doc: "a route of this topology or an input topic"},
		{Path: "routes[].assemble.parts[].when", Type: tString, Doc: "a predicate on the source's records"},
		{Path: "routes[].assemble.parts[].id", Type: tString, Doc: "this part's ID expression, over the assembly's"},
		{Path: "routes[].assemble.parts[].project", Type: tProject, Doc: "the part's value; default the source route's output or the input record"},
		{Path: "routes[].assemble.complete_when", Type: tList, Doc: "the parts that complete an assembly; default all"},
		{Path: "routes[].assemble.ttl", Type: tDuration, Required: true, Doc: "how long an assembly stays open after its first part"},
		{Path: "routes[].assemble.time", Type: tString, Default: ClockProcessing, Enum: []string{ClockProcessing, ClockEvent}, Doc: "the TTL's clock: the wall clock, or the records' event time"},
		{Path: "routes[].assemble.duplicates", Type: tString, Default: LastWins, Enum: []string{LastWins, FirstWins}, Doc: "which of two parts of one name an assembly keeps"},
		{Path: "routes[].assemble.retention", Type: tSpan, Default: "0s", Doc: "how long a completed ID is remembered (its later parts go to `duplicate_topic`)"},
		{Path: "routes[].assemble.incomplete_topic", Type: tString, Required: true, Doc: "receives assemblies whose TTL passed"},
		{Path: "routes[].assemble.duplicate_topic", Type: tString, Doc: "receives parts of IDs completed within `retention`; required with it"},
	},
	limitsSettings("routes[].assemble", "assemblies", ""),
	[]Setting{
		{Path: "routes[].assemble.repartition", Type: tBool, Default: "true", Doc: "false: the input is already partitioned by the ID; no repartition topic"},
		{Path: "routes[].tombstones", Type: tString, Default: TombstonesDirty, Enum: []string{TombstonesDirty, TombstonesForward}, Doc: "an input tombstone: dirty (`null_value`), or forwarded as it came (plain routes keeping the key)", Notes: "what an input tombstone (a keyed record with a null value, a delete on a compacted topic) does: `dirty` (reason `null_value`) or `forward`: written to this route's topic as it came (key, headers, null value), so an upsert sink deletes the row. Plain routes that keep the input key only. See [Tombstones](../dirty-route.md#tombstones-deletes-on-compacted-inputs)"},
		{Path: "routes[].topic_configs", Type: tConfigs, Doc: "topic configs of the route's topic when created, over `topics.configs`", Notes: "topic configs of the route's topic when the router creates it, over `topics.configs` (e.g. `cleanup.policy: compact` for an upsert route)"},
	},
	sloSettings("routes[]",
		Setting{Path: "max_late_share", Type: tNumber, Doc: "window routes: the largest share of the route's records that come too late for every window, 0 to 1"},
		Setting{Path: "max_event_time_lag", Type: tDuration, Doc: "the largest event-time lag of the route's newest record at a commit (commit time - event time) over the window", Notes: "the largest lag, over the window, of the route's newest record at each commit: the commit's wall-clock time minus the newest event time among the records the route took in (those its `when` matched, before any window; an assembly's parts). A replay of old data breaches it. See [Objectives](../objectives.md#what-is-measured)"}),
	[]Setting{
		{Path: "routes[].state_version", Type: tInt, Default: "0", Min: "0", Doc: "window and assembly routes: a new value starts the route on new internal topics with empty state", Notes: "window and assembly routes: the version of the route's state. A new value starts the route on new internal topics (`<application_id>-<route>-v<N>-repartition` and `-changelog`; 0 keeps the unversioned names) with empty state from the inputs' committed offsets, and each result carries the header `sidestream.state_version`; the old topics stay until `router reset --route NAME --stale` removes them. The remedy for a breaking change that keeps the router running (see [Changing a running topology](../changing-topology.md))"},
		{Path: "dirty", Type: tSection, Required: true, Doc: "the dirty route: records that fail, with their bytes and reasons"},
		{Path: "dirty.topic", Type: tString, Required: true, Doc: "the dirty route's topic"},
		{Path: "dirty.max_record_bytes", Type: tInt, Default: itoa(DefaultMaxRecordBytes), Min: "1025", Doc: "the largest record written to the dirty topic as-is; keep under its `max.message.bytes` (router run warns)", Notes: "the largest record written as-is to the **dirty topic** (keep it under the topic's `max.message.bytes`: `router run` reads it at start and warns when it is not); it bounds no other output (see `limits.max_record_bytes`)"},
		{Path: "dirty.truncate_to", Type: tInt, Default: itoa(DefaultTruncateTo), Rule: "65536, at most `max_record_bytes` - 1024", Doc: "a too-large record goes to dirty with its value cut to this size", Notes: "a dirty record too large for `dirty.max_record_bytes` is written with its value cut to this size (and `sidestream.truncated.original_bytes`); `router redrive` refuses such a record"},
		{Path: "dirty.topic_configs", Type: tConfigs, Doc: "topic configs of the dirty topic when created, over `topics.configs`"},
	},
	sloSettings("dirty",
		Setting{Path: "max_dirty_share", Type: tNumber, Doc: "the largest share of the input records consumed that go to the dirty route, 0 to 1"}),
	[]Setting{
		{Path: "shutdown_timeout", Type: tDuration, Default: dur(DefaultShutdown), Doc: "time to end the open transaction and leave the group on SIGTERM"},
		{Path: "security", Type: tSection, Doc: "how every client connects to the brokers"},
		{Path: "security.protocol", Type: tString, Default: ProtocolPlaintext, Env: EnvSecurityProtocol, Enum: []string{ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL}, Doc: "TLS and/or SASL; Kafka's upper-case names are accepted", Notes: "how every client of the router (group, admin, state restore) connects: `plaintext`, `ssl` (TLS), `sasl_plaintext` (SASL, no TLS) or `sasl_ssl` (SASL over TLS); Kafka's upper-case names are accepted. `router validate` checks each security field; the settings as a whole (what may come from the environment) are checked at `router run`, before it dials"},
		{Path: "security.tls", Type: tSection, Doc: "TLS of `ssl` and `sasl_ssl`"},
		{Path: "security.tls.ca_file", Type: tString, Env: EnvTLSCAFile, Doc: "PEM CA certificates of the brokers; default the system's roots"},
		{Path: "security.tls.cert_file", Type: tString, Env: EnvTLSCertFile, Doc: "client certificate chain (PEM); with `key_file`", Notes: "client certificate chain and its unencrypted private key (PEM, PKCS#8 or PKCS#1), for listeners with `ssl.client.auth=required`; both or neither"},
		{Path: "security.tls.key_file", Type: tString, Env: EnvTLSKeyFile, Doc: "its unencrypted private key (PEM); with `cert_file`"},
		{Path: "security.tls.server_name", Type: tString, Env: EnvTLSServerName, Doc: "the name the brokers' certificates carry; default each broker's host"},
		{Path: "security.tls.insecure_skip_verify", Type: tBool, Default: "false", Env: EnvTLSInsecureSkipVer, Doc: "accept any broker certificate: tests only, a WARN at start"},
		{Path: "security.sasl", Type: tSection, Doc: "SASL of `sasl_plaintext` and `sasl_ssl`"},
		{Path: "security.sasl.mechanism", Type: tString, Env: EnvSASLMechanism, Enum: []string{SASLPlain, SASLScramSHA256, SASLScramSHA512, SASLOAuthBearer, SASLAWSMSKIAM}, Doc: "required with `sasl_*`; AWS_MSK_IAM with `sasl_ssl` only", Notes: "`PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`, `OAUTHBEARER` or `AWS_MSK_IAM` (sasl_ssl only); required with `sasl_*`. See [OAUTHBEARER and Amazon MSK IAM](../security.md#oauthbearer-and-amazon-msk-iam)"},
		{Path: "security.sasl.username", Type: tString, Env: EnvSASLUsername, Doc: "PLAIN and SCRAM: required", Notes: "PLAIN and SCRAM: required (shown in the start log line and in authentication errors); an error with the other mechanisms"},
		{Path: "security.sasl.password", Type: tSecret, Env: EnvSASLPassword, Doc: "PLAIN and SCRAM: required; give it as the variable (the file works, with a WARN)", Notes: "PLAIN and SCRAM: required. **Give it as `SIDESTREAM_SASL_PASSWORD`** (a Kubernetes Secret): written in the file it works, but the router logs a WARN at start. Never printed: logs, errors, `/topology` and `router topology` show no password"},
		{Path: "security.sasl.oauth", Type: tSection, Doc: "OAUTHBEARER: a token by the client credentials grant"},
		{Path: "security.sasl.oauth.token_url", Type: tString, Env: EnvSASLOAuthTokenURL, Doc: "the token endpoint; `https`, `http` only to a loopback host"},
		{Path: "security.sasl.oauth.client_id", Type: tString, Env: EnvSASLOAuthClientID, Doc: "the client id"},
		{Path: "security.sasl.oauth.client_secret", Type: tSecret, Env: EnvSASLOAuthClientSecret, Doc: "the client secret: only from the variable, never the file"},
		{Path: "security.sasl.oauth.scopes", Type: tList, Env: EnvSASLOAuthScopes, Doc: "the scopes asked for (the variable: comma or space separated)"},
		{Path: "security.sasl.oauth.extensions", Type: tMap, Doc: "SASL extensions sent with the token (KIP-342)", Notes: "OAUTHBEARER: SASL extensions sent with the token (KIP-342), a map of letters-only names to values, e.g. `logicalCluster` and `identityPoolId` for Confluent Cloud"},
		{Path: "state", Type: tSection, Doc: "where window and assembly tasks keep their state"},
		{Path: "state.store", Type: tString, Default: string(StoreMemory), Env: EnvStateStore, Enum: []string{string(StoreMemory), string(StorePebble)}, Doc: "in memory (restored in full), or on disk with a local checkpoint", Notes: "where window tasks keep their state: `memory` (restored in full from the changelog on every assignment) or `pebble` (on disk under `state.dir`, with a local checkpoint so a restart restores only the changelog's tail). See [State stores](../state.md#state-stores-and-interactive-queries)"},
		{Path: "state.dir", Type: tString, Env: EnvStateDir, Doc: "`pebble`: the directory of the local stores, one per instance", Notes: "required with `pebble`: one directory per changelog partition below it (`<dir>/<changelog topic>/<partition>`), and one per lookup table with `store: pebble` (`<dir>/tables/<name>`); relative to the working directory. Give each instance its own: it must not be shared by two running routers"},
		{Path: "state.on_changelog_loss", Type: tString, Default: string(ChangelogLossFail), Env: EnvOnChangelogLoss, Enum: []string{string(ChangelogLossFail), string(ChangelogLossStartEmpty)}, Doc: "a changelog that lost state: the task stops, or starts with what is left", Notes: "what a window or assembly task does when its changelog no longer holds the state it must restore (records deleted, topic deleted or recreated, a local checkpoint outside it): `fail` (the task does not process; `/readyz` says why) or `start_empty` (it starts with what the changelog still holds, logged at WARN and counted). See [Changelog loss and refused writes](../changelog-loss.md#changelog-loss-and-refused-writes)"},
		{Path: "limits", Type: tSection, Doc: "bounds on what the router writes to its outputs"},
		{Path: "limits.max_record_bytes", Type: tInt, Min: "1", Doc: "the largest record written to any output but dirty; default each topic's `max.message.bytes`", Notes: "the largest record written to every output but dirty: routes, window and assembly repartition topics, late, overflow, incomplete and duplicate topics. Unset, each topic's own `max.message.bytes` (less 512 bytes for the batch) bounds its records; set, it caps them all (a topic's own limit still applies when smaller). A record whose output is larger goes to dirty **whole** (reason `too_large`, the topic and the limit it hit in `sidestream.error`) when the dirty topic holds it, so it can be redriven once the topic allows it; cut only when even `dirty.max_record_bytes` cannot hold it. Without an answer from the broker, `limits.max_record_bytes`, else `dirty.max_record_bytes`, bounds them"},
		{Path: "client", Type: tSection, Doc: "the Kafka client's buffers, metadata age and compression"},
		{Path: "client.fetch_max_bytes", Type: tInt, Default: itoa(DefaultFetchMaxBytes), Doc: "most bytes one fetch response holds (8 MiB); at least `fetch_max_partition_bytes`", Notes: "most bytes one fetch response may hold (franz-go's default is 50 MiB); a larger single batch still comes through"},
		{Path: "client.fetch_max_partition_bytes", Type: tInt, Default: itoa(DefaultFetchMaxPartitionBytes), Min: "1", Doc: "most bytes one partition adds to a fetch (256 KiB)"},
		{Path: "client.max_concurrent_fetches", Type: tInt, Default: "0", Min: "0", Doc: "fetches in flight or buffered; 0 is one per broker"},
		{Path: "client.max_buffered_records", Type: tInt, Default: itoa(DefaultMaxBufferedRecords), Min: "1", Doc: "records waiting to be produced; producing blocks beyond"},
		{Path: "client.max_buffered_bytes", Type: tInt, Default: itoa(DefaultMaxBufferedBytes), Rule: "64 MiB, at least 2 × the larger of `dirty.max_record_bytes` and `limits.max_record_bytes`", Doc: "bytes waiting to be produced; producing blocks beyond; at least 2 × each record limit"},
		{Path: "client.metadata_min_age", Type: tDuration, Default: dur(DefaultMetadataMinAge), Doc: "the shortest time between two metadata requests", Notes: "the shortest time between two metadata requests (franz-go's default is 5 s). A produce refused with `NOT_LEADER_FOR_PARTITION` (a broker restarted, a topic was just created) holds that partition's records until the next metadata answer, and the interval's commit waits for them"},
		{Path: "client.compression", Type: tString, Default: DefaultCompression, Enum: []string{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLz4, CompressionZstd}, Doc: "the codec of every produced batch", Notes: "the codec of every batch the router produces (outputs, dirty and side routes, repartition and changelog topics; and the records and ledger entries `router redrive` writes): `none`, `gzip`, `snappy`, `lz4` or `zstd`; each codec's library default level (no level setting). A batch that does not shrink goes uncompressed, and `zstd` goes uncompressed to a broker older than Kafka 2.1. Every consumer of the outputs must read the codec; a topic's `compression.type` other than `producer` (in `topics.configs`) makes the broker recompress"},
		{Path: "api", Type: tSection, Doc: "the HTTP API's authentication, TLS and samples"},
		{Path: "api.auth", Type: tString, Default: APIAuthNone, Env: EnvAPIAuth, Enum: []string{APIAuthNone, APIAuthBearer, APIAuthMTLS}, Doc: "who may call the API; `/healthz`, `/readyz` stay open", Notes: "who may call the HTTP API: `none` (anyone who reaches the port; a WARN at start when the listener is not loopback), `bearer` (`Authorization: Bearer <token>`) or `mtls` (a client certificate signed by `api.tls.client_ca_file`). `/healthz`, `/readyz` and the web view's page stay open. See [Securing the API](../security.md#securing-the-api)"},
		{Path: "api.token_file", Type: tString, Env: EnvAPITokenFile, Doc: "bearer tokens, one a line, at least 16 characters; re-read on change", Notes: "the accepted bearer tokens, one a line (`#` comments), each at least 16 characters; re-read when the file changes. Tokens may also (or instead) come from `SIDESTREAM_API_TOKENS`; never in the topology file"},
		{Path: "api.metrics", Type: tString, Default: APIMetricsOpen, Env: EnvAPIMetrics, Enum: []string{APIMetricsOpen, APIMetricsProtected}, Doc: "whether `/metrics` needs the credentials"},
		{Path: "api.tls", Type: tSection, Doc: "HTTPS for the API"},
		{Path: "api.tls.cert_file", Type: tString, Env: EnvAPITLSCertFile, Doc: "the certificate chain (PEM); re-read on change"},
		{Path: "api.tls.key_file", Type: tString, Env: EnvAPITLSKeyFile, Doc: "its key (PEM); re-read on change"},
		{Path: "api.tls.client_ca_file", Type: tString, Env: EnvAPITLSClientCA, Doc: "`mtls`: the CA of the accepted client certificates"},
		{Path: "api.samples", Type: tString, Default: SamplesFull, Env: EnvAPISamples, Enum: []string{SamplesFull, SamplesRedacted, SamplesOff}, Doc: "what `/ui` samples and `/state` values show", Notes: "what `/ui`'s samples and `/state`'s record values show: `full`, `redacted` (`api.redact` paths replaced by `\"***\"`) or `off` (no record content is kept; `/state` values are `\"***\"`)"},
		{Path: "api.redact", Type: tList, Env: EnvAPIRedact, Doc: "`redacted`: JSON paths replaced by `\"***\"` (`customer.email`, `items.*.card`)"},
		{Path: "api.sample_max_bytes", Type: tInt, Default: itoa(DefaultSampleMaxBytes), Env: EnvAPISampleMaxLen, Min: "1", Max: itoa(maxSampleMaxBytes), Doc: "the size cap of each shown sample, 1 to 1 MiB"},
		{Path: "schema_registry", Type: tSection, Doc: "the registry of avro, protobuf and json_schema inputs and avro routes"},
		{Path: "schema_registry.url", Type: tString, Env: EnvRegistryURL, Doc: "the Confluent-compatible base URL, without credentials; required by a registry format", Notes: "required with an `avro`, `protobuf` or `json_schema` input or a route of `format: avro` (else a problem at the input's or route's `format`): the Confluent-compatible registry's base URL, `http` or `https`, without credentials (Apicurio: `…/apis/ccompat/v7`); or `SIDESTREAM_SCHEMA_REGISTRY_URL`"},
		{Path: "schema_registry.username", Type: tString, Env: EnvRegistryUsername, Doc: "HTTP basic auth user; needs the password"},
		{Path: "schema_registry.password", Type: tSecret, Env: EnvRegistryPassword, Doc: "only from the variable, never the file", Notes: "**not in the file**: only `SIDESTREAM_SCHEMA_REGISTRY_PASSWORD` (`router validate` rejects it at its line); never printed"},
		{Path: "schema_registry.tls", Type: tSection, Doc: "TLS of an https registry"},
		{Path: "schema_registry.tls.ca_file", Type: tString, Env: EnvRegistryTLSCAFile, Doc: "PEM CA certificates of the registry; default the system's roots"},
		{Path: "schema_registry.tls.cert_file", Type: tString, Env: EnvRegistryTLSCertFile, Doc: "client certificate (PEM); with `key_file`"},
		{Path: "schema_registry.tls.key_file", Type: tString, Env: EnvRegistryTLSKeyFile, Doc: "its unencrypted key (PEM); with `cert_file`"},
		{Path: "schema_registry.fetch_timeout", Type: tDuration, Default: dur(DefaultRegistryFetchTimeout), OnRead: true, Env: EnvRegistryFetchTimeout, Doc: "bounds one schema fetch; past it the batch is retried, never dirty", Notes: "bounds one fetch of a schema and its references (a positive duration; else a problem at its line:col); past it the lookup is the registry's outage: the batch is aborted and processed again (see [Avro, Protobuf and JSON Schema inputs](../input-formats.md#avro-protobuf-and-json-schema-inputs)), never a dirty record. Keep it below the transaction timeout (`--transaction-timeout`). `router validate --registry` gives all lookups of one file 10 s whatever it is. Or `SIDESTREAM_SCHEMA_REGISTRY_FETCH_TIMEOUT`"},
		{Path: "schema_registry.unknown_id_ttl", Type: tSpan, Default: dur(DefaultRegistryUnknownIDTTL), OnRead: true, Env: EnvRegistryUnknownIDTTL, Doc: "how long a 404 schema id is remembered; 0s asks every time", Notes: "how long a schema id the registry answered 404 for is remembered (its records go dirty with `unknown_schema_id` without asking again), so a stream of records with a bogus id costs one request per TTL; `0s` asks every time (a duration of 0s or more; else a problem at its line:col). Or `SIDESTREAM_SCHEMA_REGISTRY_UNKNOWN_ID_TTL`"},
		{Path: "tracing", Type: tSection, Doc: "OpenTelemetry spans of a sampled share of records (trace contexts travel without it)"},
		{Path: "tracing.spans", Type: tBool, Default: "false", Doc: "export spans over OTLP; off, the record path pays nothing for them", Notes: "export a span for a sampled share of input records (the route decision as attributes), of window results and assemblies (linked to their inputs) and of late records, over OTLP. Off, nothing is sampled and nothing allocated per record. The W3C `traceparent` of every input reaches what the router writes for it either way. See [Tracing](../tracing.md#tracing)"},
		{Path: "tracing.sample_ratio", Type: tNumber, Default: "0.01", Min: "0", Max: "1", Doc: "the share of input records that get a span, by trace id", Notes: "the share of input records that get a span: decided by the record's trace id (the same decision as OpenTelemetry's `TraceIDRatioBased`, so every service sampling by ratio keeps the same traces), at random for a record without a `traceparent`; 0 to 1"},
		{Path: "tracing.endpoint", Type: tString, Doc: "the OTLP collector (`host:port` for grpc, a URL for http); default the exporter's and `OTEL_EXPORTER_OTLP_*`"},
		{Path: "tracing.protocol", Type: tString, Default: TracingGRPC, Enum: []string{TracingGRPC, TracingHTTP}, Doc: "OTLP over gRPC, or over HTTP (protobuf)"},
		{Path: "tracing.insecure", Type: tBool, Default: "false", Doc: "send to the collector without TLS"},
		{Path: "tracing.links", Type: tInt, Default: itoa(DefaultTraceLinks), Min: "0", Max: itoa(MaxTraceLinks), Doc: "inputs' contexts a window keeps beyond its first, for its result span's links (spans on only)", Notes: "how many inputs' trace contexts a window keeps beyond the first input's, for its result span's links; kept only with `spans: true`, 25 bytes each per open window in the state. The first input's context is always kept (it is the result's parent)"},
	},
	tableSettings,
	processSettings,
)

// processSettings are the process's own: flags and variables that are not
// in the topology file.
var processSettings = []Setting{
	{Env: EnvAPITokens, Type: tSecret, Doc: "bearer tokens of the API, comma or space separated; only here"},
	{Env: EnvConfig, Flag: "--config", Type: tString, Doc: "the topology file"},
	{Env: EnvListen, Flag: "--listen", Type: tString, Default: ":8080", Doc: "the HTTP API's address (`router demo`: 127.0.0.1:8080)"},
	{Env: EnvInstanceID, Flag: "--instance-id", Type: tString, Doc: "this process's unique name (default the host name); the transactional id is `application_id-instance_id`"},
	{Env: EnvOwnerURLTemplate, Flag: "--owner-url-template", Type: tString, Doc: "how instances reach each other's API (`{instance}`, `{host}`), for state queries and the web view's cluster view"},
	{Env: EnvStaticMembership, Flag: "--static-membership", Type: tBool, Default: "false", Doc: "the instance id as `group.instance.id`; the variable as strconv.ParseBool reads it"},
	{Env: EnvWatch, Flag: "--watch", Type: tBool, Default: "false", Doc: "`router run`: reload the topology when its file's content changes (polled every 2s: a mounted ConfigMap), as SIGHUP and `POST /reload` do; only live changes apply"},
	{Flag: "--workers", Type: tInt, Doc: "partitions of one poll processed in parallel (default GOMAXPROCS)"},
	{Flag: "--transaction-timeout", Type: tDuration, Default: "10s", Doc: "the broker-side transaction timeout"},
	{Flag: "--session-timeout", Type: tDuration, Doc: "how soon a dead member's partitions move (default franz-go's 45s; the broker allows 6s to 30m)"},
	{Env: EnvLogLevel, Flag: "--log-level", Type: tString, Default: "info", Enum: []string{"debug", "info", "warn", "error"}, Doc: "the log level; the Kafka client's per-commit lines are at debug"},
	{Env: EnvAuditMySQLDSN, Flag: "--mysql-dsn", Command: "audit", Type: tSecret, Doc: "`router audit`: the MySQL DSN of the sink to compare, `user:password@tcp(host:3306)/db`"},
	{Env: EnvLogFormat, Flag: "--log-format", Type: tString, Default: "text", Enum: []string{"text", "json"}, Doc: "the log format"},
}

// limitsSettings are the limits block of a window or an assembly route.
func limitsSettings(prefix, what, entriesMin string) []Setting {
	p := prefix + ".limits"
	return []Setting{
		{Path: p, Type: tSection, Doc: "bound each task's state; default no bound"},
		{Path: p + ".max_entries", Type: tInt, Doc: "open " + what + " per task" + entriesMin},
		{Path: p + ".max_bytes", Type: tInt, Doc: "estimated bytes of one task's open " + what},
		{Path: p + ".on_overflow", Type: tString, Default: OverflowRoute, Enum: []string{OverflowRoute, OverflowEvict}, Doc: "past a limit: the record to `overflow_topic`, or the oldest evicted",
			Notes: "`route`: a record that would open a **new** window or assembly past a limit goes, unchanged, to `overflow_topic`; `evict`: the oldest open windows are emitted at once as final results with `\"evicted\": true` (assemblies: to the incomplete route, `\"evicted\": true`) and purged. See [Bounded memory](../bounded-memory.md#bounded-memory-state-limits-and-client-buffers)"},
		{Path: p + ".overflow_topic", Type: tString, Doc: "the overflow route's topic; required with `route`"},
	}
}

func concat(parts ...[]Setting) []Setting {
	var out []Setting
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// EnvNames are the SIDESTREAM_* variables the router reads, sorted as
// Settings declares them.
func EnvNames() []string {
	var out []string
	for _, s := range Settings {
		if s.Env != "" {
			out = append(out, s.Env)
		}
	}
	return out
}

// sectionEnv maps each setting under a section ("security", "api") to
// its variable: what overrideCheck names in messages.
func sectionEnv(section string) map[string]string {
	out := map[string]string{}
	for _, s := range Settings {
		if s.Env != "" && len(s.Path) > len(section) && s.Path[:len(section)+1] == section+"." {
			out[s.Path] = s.Env
		}
	}
	return out
}

// SettingAt is the setting at a YAML path ("routes[].window.size").
func SettingAt(path string) (Setting, bool) {
	for _, s := range Settings {
		if s.Path == path && path != "" {
			return s, true
		}
	}
	return Setting{}, false
}
