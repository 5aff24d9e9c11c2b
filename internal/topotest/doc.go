// Package topotest is the engine of `router test`: topology test files
// (a topology, cases of input records, the records each route must
// receive) run through the real processor on an in-process Kafka
// (kfake), each case on a fresh cluster, the routes read back
// read_committed and diffed against what the case expects.
//
// It owns the test file format, its reading and checks, the in-process
// schema registry of a registry-backed case (registry.go, avro.go) and
// the diff. It must never change how the router runs: it drives the
// runtime (internal/runtime) only through its public options, and
// writes to the in-process cluster only what a producer could.
package topotest
