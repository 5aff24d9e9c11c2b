package wire

// HeaderPrefix starts every header the router and redrive set.
const HeaderPrefix = "sidestream."

// Headers the router sets on dirty records. Original headers are kept and
// these are appended, so a redrive tool can restore the input exactly.
const (
	HeaderError     = "sidestream.error"
	HeaderReason    = "sidestream.reason"
	HeaderStage     = "sidestream.stage"
	HeaderTopic     = "sidestream.source.topic"
	HeaderPartition = "sidestream.source.partition"
	HeaderOffset    = "sidestream.source.offset"
	HeaderTimestamp = "sidestream.source.timestamp"
	HeaderAppID     = "sidestream.application_id"
	HeaderTruncated = "sidestream.truncated.original_bytes"
)

// HeaderTopologyVersion names the topology version that routed a record:
// the content fingerprint of the plan (16 hex digits, what GET /topology
// and sidestream_topology_info{version} show). Stage one sets it on every
// record it writes out: a route's output, a forwarded tombstone, a dirty
// record; an input's own is replaced. A hot reload changes it at a
// transaction boundary, so one transaction's records name one version.
// Stage two's records (window results, assemblies and their side
// records) aggregate records of any version and carry none.
const HeaderTopologyVersion = "sidestream.topology.version"

// Headers of the window stage. Stage one (routing) writes the record to
// the route's repartition topic keyed by the group key, carrying its event
// time and origin; stage two reads them back.
const (
	HeaderEventTime = "sidestream.event_time"
	HeaderSourceKey = "sidestream.source.key"
	HeaderLateWM    = "sidestream.late.watermark"
	HeaderLateWins  = "sidestream.late.windows"
	HeaderLateBy    = "sidestream.late.by_ms"
	HeaderLateRoute = "sidestream.late.route"
	HeaderRevision  = "sidestream.window.revision"
	HeaderFinal     = "sidestream.window.final"
	// HeaderFields carries the input fields the route's aggregates read,
	// as stage one decoded them (AppendFields, DecodeFields): stage two
	// reads them instead of decoding the value again. A record without
	// it (an older writer, a foreign one) is decoded from its JSON value.
	HeaderFields = "sidestream.fields"
)

// Headers of the watermark sources.
//
// Each input partition is a source. Stage one keeps, per source, the
// maximum event time of the records it decoded, in offset order. It
// stamps every record it writes to a window's repartition topic with that
// maximum as it was before the record (HeaderSourceMax), and at each
// commit writes a mark with the new maximum to every partition of every
// window repartition topic (HeaderMark), so a task hears of a source's
// progress even when none of its records went there.
const (
	// HeaderSourceMax is the source's maximum event time before the
	// record, in epoch ms; empty when the source had none yet.
	HeaderSourceMax = "sidestream.source.max_event_time"
	// HeaderMark makes a record a mark: no data, only a source's progress
	// (HeaderSourceMax, with HeaderTopic and HeaderPartition naming it).
	HeaderMark = "sidestream.watermark.mark"
)

// Headers of the assembly stage. Stage one writes each part to the
// route's repartition topic keyed by its ID, naming the part; stage two
// writes assembled, incomplete and duplicate records with these.
const (
	HeaderPart          = "sidestream.assembly.part"
	HeaderAssemblyRoute = "sidestream.assembly.route"
	HeaderAssemblyParts = "sidestream.assembly.parts"   // the parts held, comma-separated
	HeaderMissing       = "sidestream.assembly.missing" // the required parts missing, comma-separated
	HeaderComplete      = "sidestream.assembly.complete"
	HeaderDuplicateOf   = "sidestream.assembly.completed_id"
)

// Headers of a record a full task sent to its route's overflow route
// (limits.on_overflow: route), and of an evicted window result.
const (
	HeaderOverflowRoute = "sidestream.overflow.route"
	HeaderOverflowLimit = "sidestream.overflow.limit" // max_entries or max_bytes
	HeaderOverflowMax   = "sidestream.overflow.max"   // the configured bound
	HeaderOverflowSize  = "sidestream.overflow.size"  // the task's size when the record arrived
	HeaderEvicted       = "sidestream.window.evicted"
	// HeaderAssemblyEvicted is "true" on an incomplete assembly that
	// on_overflow: evict emitted before its TTL.
	HeaderAssemblyEvicted = "sidestream.assembly.evicted"
)

// HeaderLookupTooOld is on every record stage one writes for a record
// whose lookup() an as_of table answered with the oldest version it
// keeps, because the record's event time is before the table's history
// and the key changed since (on_too_old: oldest): the row may not be the
// one valid at the record's time. Its value names the tables that did,
// comma-separated, in the order the record's expressions first read
// them. A record whose lookups were all exact (or missed) carries none:
// in a topology with tables an input's own is dropped.
const HeaderLookupTooOld = "sidestream.lookup.too_old"

// HeaderStateVersion is on every result of a window or assembly route
// with a state_version (its decimal value): the version of the state the
// result was computed from. Absent: version 0.
const HeaderStateVersion = "sidestream.state_version"

// Headers `router redrive` sets on every record it re-injects. The router
// recognises a redriven record by HeaderRedriveOrigin, counts it
// (sidestream_records_redriven_total) and, like every input header, keeps
// the marks on whatever it writes for the record: route outputs, the
// repartitioned copy of a window route, and the dirty record if it fails
// again, so a record that loops back to dirty says how often it was
// redriven already.
const (
	// HeaderRedriveOrigin is topic/partition/offset of the side-route
	// record that was redriven: the record's identity in the ledger.
	HeaderRedriveOrigin = "sidestream.redrive.origin"
	// HeaderRedriveRun names the redrive run (one run, one id).
	HeaderRedriveRun = "sidestream.redrive.run"
	// HeaderRedriveReason is the reason the record had on its side route
	// (the dirty reason, or "late").
	HeaderRedriveReason = "sidestream.redrive.reason"
	// HeaderRedriveCount is how many times this record has been redriven,
	// this time included.
	HeaderRedriveCount = "sidestream.redrive.count"
	// HeaderRedriveAt is when it was redriven, epoch ms.
	HeaderRedriveAt = "sidestream.redrive.at"
)
