// Package objective owns per-route objectives (slo:): the sliding window
// of counts each objective is judged over, its value and breach, and the
// guard that pauses the inputs while an objective with on_breach: pause
// is breached, until a resume or its resume_after.
//
// It is pure: it imports only the standard library, never a client, the
// config model or the metrics; the runtime feeds it the counts of each
// committed interval and applies the pause to its client.
package objective
