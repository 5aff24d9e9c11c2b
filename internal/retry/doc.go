// Package retry is the router's one retry schedule: waits that double
// from a first one up to a ceiling, each randomized (jitter) so routers
// that failed together do not retry together, and a wait that ends with
// its context. The schedule is cenkalti/backoff's ExponentialBackOff,
// clamped to the ceiling. It imports nothing of ours and must never: the
// runtime, the tools and cmd/router all retry with it.
package retry
