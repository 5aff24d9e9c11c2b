// Package audit compares a route's output topic with the stores its sinks
// fill: an Elasticsearch index (one document per key, _id = key) and a
// MySQL table (one row per key, the key in a primary-key column). The
// topic is read as the sinks read it (read_committed, the latest value per
// key, a tombstone deleting the key) into an on-disk Pebble store, then
// each sink is streamed in key order (Elasticsearch by search_after on
// _id, MySQL ORDER BY the key's bytes) and merge-compared against it: memory
// stays bounded whatever the number of keys. It reports, per sink, the
// keys missing from the sink, the extra keys the topic does not hold, and
// the keys whose values differ.
//
// It never writes to a sink (an Elasticsearch _refresh aside, so that what
// the index holds is searchable), never imports the runtime and holds no
// state between runs.
package audit
