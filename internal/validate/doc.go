// Package validate is `router validate`: it loads and compiles topology
// files as `router run` would before connecting, with every problem at
// FILE:LINE:COL, and checks the fields the expressions read against the
// registry-backed inputs' writer schemas (asking the schema registry
// unless offline). A topology test file is validated through the
// topology it names.
//
// It never connects to Kafka, never parses flags and never exits the
// process: its usage errors carry their exit code (internal/cliexit).
package validate
