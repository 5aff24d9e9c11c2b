package wire

// Stages a record passes; a failure names the stage on the dirty route
// (HeaderStage).
const (
	StageDecode    = "decode"
	StageSchema    = "schema"
	StageEventTime = "event_time"
	StageRoute     = "route"
	StageProduce   = "produce"
	StageWindow    = "window"
	StageAssemble  = "assemble"
)

// Reasons are short, bounded codes (metric labels, HeaderReason); the
// full message travels in HeaderError.
const (
	ReasonNullValue      = "null_value"
	ReasonEmptyValue     = "empty_value"
	ReasonInvalidUTF8    = "invalid_utf8"
	ReasonInvalidJSON    = "invalid_json"
	ReasonNotObject      = "not_object"
	ReasonSchema         = "schema_violation"
	ReasonMissingTime    = "missing_event_time"
	ReasonBadTime        = "bad_event_time"
	ReasonTimeAhead      = "event_time_ahead"
	ReasonExprError      = "expression_error"
	ReasonPredicateType  = "predicate_not_bool"
	ReasonKeyError       = "key_error"
	ReasonProjectError   = "projection_error"
	ReasonTooLarge       = "too_large"
	ReasonUnknownTopic   = "unknown_input_topic"
	ReasonUnsupportedFmt = "unsupported_format"
	// ReasonConnectType is the dirty reason of a record whose value does
	// not fit its connect-json route's schema (a field's type is wrong).
	ReasonConnectType = "connect_type"
	// ReasonAvroEncode is the dirty reason of a record (StageRoute) or a
	// window result (StageWindow) whose value does not fit its avro
	// route's registered schema (a string where a long is, say).
	ReasonAvroEncode = "avro_encode"
	// ReasonBadMark: a record marked as a watermark mark that is not a
	// valid one (a foreign writer on a repartition topic).
	ReasonBadMark = "bad_watermark_mark"
)

// Reasons of a route whose topic is computed per record (topic_from),
// all StageRoute: the record goes to dirty whole, never lost.
const (
	// ReasonTopicInvalid: the expression failed, yielded no string, or
	// a string that is not a valid Kafka topic name.
	ReasonTopicInvalid = "topic_invalid"
	// ReasonTopicNotAllowed: a valid name outside the route's allow-list,
	// or one of the topology's own topics (an input, dirty ...).
	ReasonTopicNotAllowed = "topic_not_allowed"
	// ReasonTopicMissing: the topic does not exist (missing: require).
	ReasonTopicMissing = "topic_missing"
	// ReasonTopicCreateRefused: the brokers refused to create it
	// (missing: create): a create-topic policy, an authorization, a bad
	// setting. A broker that does not answer is no record's fault.
	ReasonTopicCreateRefused = "topic_create_refused"
)

// Reasons of registry-backed inputs (Avro, Protobuf, JSON Schema in the
// Confluent wire format; package registry). Stage: StageDecode for all but
// ReasonJSONSchemaInvalid, which is StageSchema (as ReasonSchema). A
// registry that is unreachable or answers 5xx is never a record's fault:
// it has no reason here, the task waits and retries.
const (
	// ReasonNotRegistryFramed: the value does not start with the magic
	// byte 0 and a 4-byte schema id.
	ReasonNotRegistryFramed = "not_registry_framed"
	// ReasonUnknownSchemaID: the registry answers 404 for the schema id.
	ReasonUnknownSchemaID = "unknown_schema_id"
	// ReasonAvroDecode: the payload does not decode with its writer
	// schema (or the schema is not Avro, or does not parse).
	ReasonAvroDecode = "avro_decode"
	// ReasonProtobufDecode: bad message indexes, a payload that does not
	// unmarshal, or a schema that does not compile.
	ReasonProtobufDecode = "protobuf_decode"
	// ReasonJSONSchemaDecode: the payload after the frame is not a JSON
	// object, or the schema does not compile.
	ReasonJSONSchemaDecode = "json_schema_decode"
	// ReasonJSONSchemaInvalid: the JSON value fails its registry schema
	// (StageSchema).
	ReasonJSONSchemaInvalid = "json_schema_invalid"
)

// Reasons of the window stage. The window operator's own reasons
// (ReasonEventTimeRange to ReasonAggOverflow) are its RecordError codes;
// the operator declares them too, as it imports nothing of the runtime,
// and a test of the processor keeps the two equal.
const (
	ReasonAggregate  = "aggregate_error"
	ReasonStateError = "state_error"
	// ReasonNotPartitioned: a window route without a repartition topic
	// (repartition: false) got a record whose group key belongs to
	// another partition: the input is not partitioned by the group key.
	ReasonNotPartitioned = "not_partitioned_by_group_key"
	// ReasonBadFields: a repartitioned record's fields header
	// (HeaderFields) does not decode (a foreign writer or a corrupted
	// record), or stage one could not encode a field (a value outside
	// the value model, nested too deep).
	ReasonBadFields = "bad_repartition_fields"

	ReasonEventTimeRange = "event_time_out_of_range"
	ReasonValueCount     = "value_count"
	ReasonValueType      = "value_type"
	ReasonNonFinite      = "value_not_finite"
	ReasonAggOverflow    = "aggregate_overflow"
)

// Reasons of the assembly stage. ReasonBadAssemblyID, ReasonUnknownPart
// and ReasonBadPartValue are the assembly operator's codes (kept equal to
// them by a test of the processor).
const (
	ReasonBadAssemblyID  = "bad_assembly_id"
	ReasonUnknownPart    = "unknown_part"
	ReasonBadPartValue   = "bad_part_value"
	ReasonPartPredicate  = "part_predicate_error"
	ReasonPartProjection = "part_projection_error"
	// ReasonNotPartitionedByID: an assembly route without a repartition
	// topic (repartition: false) got a part whose ID belongs to another
	// partition: the input is not partitioned by the assembly ID.
	ReasonNotPartitionedByID = "not_partitioned_by_id"
)

// DropNoRoute is the reason label of records that matched no route when
// routing.default is drop (sidestream_records_dropped_total).
const DropNoRoute = "no_route"

// Kinds of a changelog loss (the reason label of
// sidestream_changelog_loss_total).
const (
	LossRecordsDeleted       = "records_deleted"
	LossChangelogEmpty       = "changelog_empty"
	LossChangelogMissing     = "changelog_missing"
	LossCheckpointPastEnd    = "checkpoint_past_end"
	LossCheckpointBelowStart = "checkpoint_below_start"
)
