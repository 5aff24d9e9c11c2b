// Package assembly owns the join-assembly operator: parts of one record
// arriving separately (from one stream split in several, or from several
// topics), keyed by a shared ID, held until a completion rule holds, then
// emitted as one assembled value; or, when a time-to-live passes first,
// emitted as incomplete with the names of the missing parts. All of its
// state (open assemblies, completed-ID markers, timers and the clock) is in
// a key-value Store, so an operator rebuilt from a restored store continues
// exactly as the uninterrupted one would.
//
// It is pure and deterministic: outputs depend only on the sequence of
// calls (Process, Advance) and their arguments. It never reads a clock:
// under processing-time TTL the caller passes the wall clock, under
// event-time TTL the part's event time. It must never do I/O other than
// through its Store, evaluate expressions, decide routes or topics, or
// panic on any input.
//
// # Semantics
//
// Times are epoch milliseconds on one clock, the TTL's: the operator's
// clock is the largest time it has been given (by Process or Advance),
// never decreasing; math.MinInt64 before the first.
//
// Process(id, part, t, value) first applies the part, then advances the
// clock to t:
//
//   - If id completed and its marker is still held (retention > 0 and the
//     clock has not reached completion time + retention), the part is a
//     Duplicate: no state changes; the caller writes it to the duplicate
//     route.
//   - Otherwise, if no assembly is open for id, one opens: first = t,
//     deadline = t + TTL.
//   - A part already held is a duplicate part (Output.DuplicatePart):
//     LastWins replaces its value and time, FirstWins keeps the held one.
//     Either way it is counted, never emitted on its own.
//   - When every required part is held, the assembly is emitted
//     (Output.Assembled, done = t), its state is deleted, and with
//     retention > 0 a completed marker is kept until t + retention.
//   - Advancing the clock to c fires, in order of (time, kind, id), every
//     timer at or before c: an open assembly whose deadline <= c is emitted
//     as incomplete (done = its deadline) with the names of the missing
//     required parts, and deleted; a completed marker whose retention ends
//     <= c is forgotten (a later part opens a new assembly).
//
// Advance(c) only advances the clock (the commit loop's tick under
// processing time).
//
// The assembled value is JSON:
//
//	{"id":"42","complete":true,"parts":{"x":{...},"y":{...}},"missing":[],
//	 "first_ms":1000,"last_ms":1200,"done_ms":1200}
//
// parts in the order of the spec, each the part's JSON value as given;
// missing lists the required parts not held (empty when complete).
package assembly
