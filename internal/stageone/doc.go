// Package pipeline is stage one of the router: one input record in, the
// records to write out, and the record counted in a metrics.Tally.
//
// It decodes the JSON value (validity, schema, event time, the fields the
// expressions read), evaluates the routes (predicates, keys, projections,
// the connect-json format), takes the assembly parts and stamps the
// records bound for a repartition topic with the envelope stage two reads
// (wire.HeaderRepartition: the event time, the source record's key and
// place, the source's maximum event time, and for a window route the
// fields its aggregates read). Stage two (the window and assembly tasks) reads
// those records back with WindowValues (the fields header read by field
// number, the aggregates' counts and fast forms on it), which falls back
// to RepartitionedFields (the fields header; the JSON value decoded again
// only without it) and AggregateValues, and sends its own bad records
// through Engine.Dirty.
//
// It is pure by construction: it takes a *kgo.Record as a value and never
// talks to Kafka (no client, no admin), holds no state store and imports
// nothing of the runtime (.golangci.yml's depguard rule pipeline-pure).
// The same input always gives the same output, which the exactly-once
// replay relies on. Conservation per record lives in one place,
// Engine.ProcessFrom: every input is counted consumed once and then
// exactly once as routed (its outputs), dirty (exactly one dirty record,
// with its stage and reason) or dropped (no route took it).
package stageone
