// Package changelog owns the state stores of stateful operators and the
// contract between a store and its changelog: which key-value changes a
// commit must write to the compacted changelog topic, and how a store is
// rebuilt from that topic.
//
// A Store holds one task's state (one operator, one input partition). It
// tracks the keys changed since the last ResetChanges, so a commit writes
// only the last value (or tombstone) of each key, and it applies changelog
// records with Restore without tracking them again.
//
// This package must never decide what state means (that belongs to the
// operators, e.g. internal/operator/window), never read a wall clock, never
// decide what a changelog loss means (the runtime's policy), and never
// import processor, api or topology. Stores are not safe for concurrent
// use: a task owns its store and drives it from one goroutine.
//
// Memory is the default backend. Pebble is the on-disk backend, for state
// larger than memory; it is also a Checkpointer: its writes become durable
// only with Commit(offset), atomically with the changelog offset they
// reflect, so the durable state is always the state at a committed
// changelog offset and a restart restores only the changelog from there.
// Len and SizeBytes are exact counters, persisted with the checkpoint
// (recounted by one scan after a restore, which writes without reading). The
// conformance suite in internal/changelog/storetest is what any backend must pass.
//
// Restore rebuilds a store from its compacted changelog partition, to the
// stable end (it waits while a transaction is open there), from the
// store's checkpoint when it has a usable one. It returns facts (records
// applied, the offsets read, the log start) and tells each finding that
// may be a loss (a checkpoint outside the partition, an empty partition,
// records deleted) to the caller's OnFinding, which decides: this package
// applies no policy, and the state it leaves under a loss the caller
// stops on is the state it found. Its only clock is the caller's (Began).
package changelog
