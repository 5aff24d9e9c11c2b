// Package sideroute reads and repairs the topics of a topology's routes:
// it names them (routes, the dirty route, the late routes of window
// routes), tails a route's topic read_committed (router tail) and
// re-injects side records into a topic in Kafka transactions with a ledger
// that makes every record go at most once (router redrive), and prints
// records for people or as JSON (Printer: tail, redrive --dry-run). The
// headers it reads and writes are the wire package's.
//
// It reads and writes Kafka only when asked; it never changes what the
// router itself does. The router never imports it, and it never imports
// the router's runtime (processor).
package sideroute
