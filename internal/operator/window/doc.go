// Package window owns the event-time window operator: window assignment
// (tumbling, hopping, session), the per-task watermark, firing, allowed
// lateness (grace), purging, the late verdict, and the aggregations, with
// all of its state (watermark, windows, revisions, timers) in a key-value
// Store so that an operator rebuilt from a restored store continues exactly
// as the uninterrupted one would.
//
// It is pure and deterministic: the outputs depend only on the sequence of
// calls (Process, AdvanceWatermark) and never on wall-clock time, timing or
// restarts. It must never read a clock (the caller computes idle advance),
// do I/O other than through its Store, evaluate expressions (the caller
// passes evaluated values), decide routes or topics, or panic on any input:
// a bad record is a *RecordError the caller sends to the dirty route.
//
// # Semantics
//
// Times are epoch milliseconds. A window is [start, end).
//
//   - Watermark = max event time seen − MaxOutOfOrderness, never decreasing;
//     AdvanceWatermark can raise it further (idle advance). Before the first
//     record it is math.MinInt64.
//   - A window fires when watermark >= end; it is purged (state deleted)
//     when watermark >= end + grace. Emission order within one call is by
//     window end, then group key, then window start.
//   - EmitUpdate: the first result at firing (revision 1), one updated
//     result (revision+1) for every record applied to a window that already
//     fired, and a final marker at purge (revision+1, final=true, same
//     aggregates). When a window fires and is purged in the same step (grace
//     0, or a watermark jump) only the final result is emitted.
//   - EmitFinal: exactly one result per window, at purge: revision 1,
//     final=true.
//   - A record is LATE when every window it belongs to is already purged
//     (end + grace <= watermark at arrival). It changes no state; Output.Late
//     carries the watermark at arrival, the windows it missed and
//     LateBy = watermark − (max end among them + grace), >= 0. A record that
//     misses some but not all of its windows is applied to the open ones and
//     is not late.
//   - Sessions: a record at t is the session [t, t+gap). Sessions of one key
//     that overlap or touch (a.start <= b.end && b.start <= a.end) merge. A
//     record that touches a still-open session is applied even if its own
//     [t, t+gap) is past end + grace. The merged session continues from the
//     highest revision of the sessions it absorbed; absorbed sessions that
//     had emitted and whose start differs from the merged start get a
//     retraction (Result.Retract, a tombstone for their output key). A merged
//     session whose end is still after the watermark waits to fire again.
//
// A timeline for one tumbling window [10:00, 10:05) with
// MaxOutOfOrderness 1m and Grace 4h (the seed-001 setting), in watermark
// time:
//
//	watermark:  ... 10:05 ............................ 14:05 ...........
//	                  |  fires: revision 1               |  purged: final
//	records:   [window][ grace: each record updates it   ][ late route ]
//	update:        r1 ... r2 ... r3 (one per late record)  r4 final=true
//	final:                                                 r1 final=true
//
// Output keys are "<group key>@<window start>", start in decimal epoch ms;
// values are JSON with epoch-ms times (see Result).
package window
