// Package wire is the router's on-topic contract: the names of the
// headers it writes (dirty, late, overflow, assembly and repartition
// records, watermark marks, the marks of router redrive), the stage and
// reason codes a dirty record carries, the kinds of a changelog loss, the
// decoding of those headers from a record, and the binary encodings of
// what stage one hands stage two: the repartition envelope (envelope.go)
// and the fields within it (fields.go).
//
// The runtime (processor), the tools (sideroute, router tail and redrive)
// and the web view (live) all read the contract here, so a tool never
// needs the runtime to read what the runtime wrote. A value here is on
// topics already written: renaming one breaks readers of old records.
//
// wire must never import the runtime, a Kafka client, the config model or
// any other package of this module: only the standard library and
// franz-go's kgo.RecordHeader, the type headers come in.
package wire
