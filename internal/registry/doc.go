// Package registry decodes record values framed in the Confluent wire
// format (magic byte 0, a big-endian 4-byte schema id, for Protobuf the
// message indexes; franz-go's sr.ConfluentHeader reads the frame) with
// their writer schema, fetched from a Confluent-compatible schema
// registry by id (franz-go's sr.Client) and cached. Formats: Avro
// (hamba/avro), Protobuf (protocompile + dynamicpb), JSON Schema
// (santhosh-tekuri/jsonschema). Each record decodes with its own writer
// schema, so records of several schema versions in one stream all decode.
//
// It owns the frame, the schema cache and the decoders. It must never
// import the runtime (processor, pipeline), the config model (topology),
// api, live, sideroute or cmd: only wire (the reason codes) and metrics
// of ours (.golangci.yml, registry-alone). The caller hands it plain
// values: a *sr.Client, a Format, an event-time field and format.
//
// # Value model
//
// The JSON input's (internal/stageone/decode.go): Value.Fields are the top-level
// fields as map[string]any; nested records/messages/objects are
// map[string]any, arrays []any; integers are int (exact, never through
// float64; beyond int64, float64), other numbers float64, strings,
// bools, nil.
//
//   - Avro: a union is its branch's value (null: nil), never a
//     {"type": value} wrapper; where a union of int.date and a long
//     timestamp leaves the branch unclear, the first listed wins. Enums
//     are their symbol (string). bytes and fixed are standard base64
//     text. timestamp-millis/micros and local-timestamp-millis/micros are
//     epoch ms (int, micros floored; local ones read as UTC). date is
//     epoch days (int). time-millis is ms of the day, time-micros µs of
//     the day (int). A decimal is exact: an int when integral and it fits
//     int64, else a float64 only when float64 holds it exactly, else its
//     digits as text with the schema's scale ("12.34"). duration (fixed)
//     is {"months","days","milliseconds"}. uuid is a string. float is
//     widened to float64; NaN and ±Inf stay as they are.
//   - Protobuf: fields by their proto names (not the JSON names). The
//     message indexes select the message. Integers of every width are
//     int (uint64 above int64: float64). Enums are their value names (a
//     number the schema does not name: that int). bytes are base64.
//     google.protobuf.Timestamp is epoch ms (floored); the wrapper types
//     (Int64Value, StringValue, ...) are their value. A field with
//     presence (message, optional, oneof member, proto2) that is unset is
//     absent; a proto3 scalar without presence is its value, zero
//     included; lists and maps are [] and {} when empty; map keys are
//     their text.
//   - JSON Schema: the JSON value after the 5-byte frame, validated with
//     the registry's schema, decoded as the JSON input decodes.
//
// Value.EventTime reads a (dotted) field as the JSON input does
// (epoch_ms, epoch_s, rfc3339), except that a logical time field of the
// writer schema (Avro timestamp-*, local-timestamp-*, date; Protobuf
// Timestamp) is taken as the time it is, whatever the format.
//
// # Error classes
//
//   - *RecordError: permanent for one record, to the dirty route with its
//     Stage and Reason (wire: not_registry_framed, unknown_schema_id: the
//     registry answered 404, avro_decode, protobuf_decode,
//     json_schema_decode at StageDecode; json_schema_invalid at
//     StageSchema). A schema that does not compile is cached and makes
//     every record of its id dirty with the format's decode reason.
//   - *UnavailableError (IsRetryable): the registry is unreachable, timed
//     out (WithFetchTimeout, default 10s), answered 5xx, 401, 403, 429 or
//     anything but 404. Never the record's fault: the caller backs off
//     and retries, nothing is dirtied. Nothing is cached for it.
//   - ctx's error when the caller's ctx ends while it waits.
//
// Decode never panics on any value (decoders recover; fuzzed).
//
// # Cache
//
// Schemas by id are immutable: a hit never expires. Concurrent lookups of
// one id share one fetch (singleflight), detached from any one caller's
// cancel and bounded by the fetch timeout. A 404 is remembered for
// WithUnknownTTL (default 30s). References (Avro named types, .proto
// imports, JSON Schema $refs) are fetched by subject and version,
// depth first, at most 16 deep.
//
// # Metrics
//
// Through Hooks (lookups, cache hits, errors by kind); the names are in
// internal/metrics/registry.go, and m.SchemaRegistry (built by metrics.New) is the
// Hooks the caller passes to WithHooks.
//
// # Integration
//
// The topology's schema_registry section and input formats (topology),
// the sr.Client (kclient.RegistryClient), one Registry and a Decoder per
// registry-backed input built by the processor (internal/runtime/stageone.go) and
// handed to stage one (stageone.WithDecoders): a RecordError goes to
// dirty with the original bytes; an UnavailableError aborts the batch,
// shows on /readyz and is retried with backoff
// (internal/runtime/registryoutage.go). Avro outputs are written by stage
// one too (internal/stageone/avroout.go): a schema derived from the
// route's projection, registered under <topic>-value by the runtime
// (internal/runtime/avroregister.go) before the first poll.
//
// Fields (fields.go) is what a schema says about the paths its values
// can hold; Registry.Latest fetches a subject's latest schema with it, for
// router validate --registry.
package registry
