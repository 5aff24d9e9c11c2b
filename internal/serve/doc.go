// Package serve runs one compiled topology as `router run` does: the
// processor (internal/runtime), the HTTP API and the web view's state,
// until its context ends; then it stops both within the topology's
// shutdown timeout. It also loads a topology the way every subcommand
// does (file, overrides, compile) and builds the logger the flags ask for.
//
// cmd/router and the demo (internal/demo) call it; it never parses flags,
// never reads os.Args and never exits the process: its errors carry their
// exit code (internal/cliexit).
package serve
