// Package processor is the runtime: it runs a compiled topology against
// Kafka. It holds the session (Run: wait for the brokers, ensure the
// topics, one group session at a time, rebuilt after a fatal client
// error), the one poll-process-commit loop over a committer (exactly-once:
// a transaction per interval; at-least-once: offsets after every ack),
// fetch dispatch to the stages, input-gap accounting, the purge of
// repartition topics and the repair of offsets a lost transaction marker
// left pending.
//
// The stages and what they report to live elsewhere: stage one is the
// pure pipeline package (one record in, its records and a tally out);
// stage two, the window and assembly tasks over their stores, is
// internal/stagetwo, which reaches the runtime only through the
// stagetwo.Runtime interface this package implements (stage.go); the
// observer behind /readyz, /healthz and /tasks is internal/observe; every
// Kafka client is built by kclient. Only the commit loop (txn.go) ends an
// interval, so the two guarantees cannot drift. DESIGN.md has the path of
// one record through these parts and the invariants each boundary states.
package runtime
