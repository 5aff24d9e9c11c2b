// Package sideroute reads and repairs the topics of a topology's routes:
// it names them (routes, the dirty route, the late routes of window
// routes), decodes the reason headers the router puts on side records,
// tails a route's topic read_committed (router tail) and re-injects side
// records into a topic in Kafka transactions with a ledger that makes every
// record go at most once (router redrive).
//
// It reads and writes Kafka only when asked; it never changes what the
// router itself does, and the router never imports it.
package sideroute
