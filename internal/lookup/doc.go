// Package lookup holds lookup tables: the rows of a compacted topic by
// key, in the current mode (the latest row of each key; a tombstone
// deletes it) or as of a time (each key's versions by their time, kept
// for a history, a lookup answering with the version valid at the
// record's event time).
//
// The store is pure: rows come in through Apply in the topic's order and
// lookups read them, under one lock per table. It holds no client: the
// runtime's loader (internal/runtime, tables.go) reads the topic and
// applies what it reads. Its answers depend only on the rows applied,
// never on when pruning ran, which the property test checks against a
// brute-force oracle over the whole history.
//
// A Durable table (pebble.go) is a Table that also mirrors every version
// it keeps in a Pebble database, committed with the caller's checkpoint
// in one batch; lookups read the Table in memory either way. The same
// property tests run against both, the Pebble one restarted at random.
package lookup
