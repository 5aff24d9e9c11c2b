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
// Memory is the default backend. An on-disk backend (Pebble) is a later
// step; the interface is shaped for it: every operation can return an
// error; Get's value is only guaranteed until the next write and Range's
// only during the callback, so an iterator-backed store need not copy;
// Changes' slices are the caller's to keep (a Pebble store copies them);
// Range is an ordered prefix scan (an iterator with bounds); Close releases
// resources. Len and SizeBytes are exact counters, which an on-disk store
// keeps by reading the old value on write, or persists next to its local
// checkpoint together with the changelog offset it covers. The conformance suite in
// changelog/storetest is what any backend must pass.
package changelog
