// Package demo is `router demo`: an embedded Kafka (franz-go's kfake) and,
// for an Avro input, an in-process schema registry; the router serving a
// topology on them (internal/serve) with the web view; a generator of
// records with an oracle (internal/gen) or your own records from JSON
// lines files; and a verdict read back read_committed that checks
// conservation: every record produced is routed, dirty or dropped, and
// what the outputs hold equals what the router counted.
//
// It never reaches a real cluster or registry (the security and
// schema_registry settings of the file and the environment are dropped),
// never parses flags and never exits the process: its errors carry their
// exit code (internal/cliexit).
package demo
