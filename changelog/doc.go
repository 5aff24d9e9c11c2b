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
// operators, e.g. processor/window), never read a wall clock, and never
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
// conformance suite in changelog/storetest is what any backend must pass.
package changelog
