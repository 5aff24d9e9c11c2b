// Package tracing makes the router's OpenTelemetry spans (tracing.spans):
// one per sampled input record, with the route decision as attributes
// and the input's W3C traceparent as parent; one per window result and
// assembly whose first input was sampled, linked to the other inputs; one
// per sampled late record. It owns the sampling decision, so a record
// that is not sampled costs a header scan and a comparison, and with
// spans off (a nil *Tracer) nothing at all.
//
// The trace contexts themselves travel without it: stage one copies an
// input's headers to what it writes, stage two keeps the contexts of a
// window's and an assembly's inputs in their state (docs/tracing.md).
//
// tracing imports the plan, the wire contract and OpenTelemetry; never
// the runtime, a stage, the config model or a Kafka client beyond kgo's
// record type.
package tracing
