// Package live is the state of the web view (/ui): counters and rates per
// route, stage and input from the metrics, the tasks, and the latest
// records of the dirty and late routes, sampled in memory in bounded rings
// and rendered safely (escaped, truncated, binary as hex).
//
// It only reads: metrics it gathers, records the processor hands it after
// a commit, tasks it asks for. It must never block the processor.
package live
