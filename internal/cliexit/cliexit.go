// Package cliexit carries the exit code an application error asks the
// router binary for: 1 when the work failed (a bad topology, a failed
// demo, a failing test), 2 when the command line was wrong. Packages that
// serve a subcommand (demo, serve, validate) return these errors; only
// cmd/router turns them into a process exit. It imports nothing of ours.
package cliexit

import "fmt"

// Error ends the router with Code, printing Msg (when not empty) on
// stderr.
type Error struct {
	Code int
	Msg  string
}

func (e Error) Error() string { return e.Msg }

// Usage is a command-line mistake: exit code 2.
func Usage(format string, a ...any) error {
	return Error{Code: 2, Msg: fmt.Sprintf(format, a...)}
}

// Failed is work that failed: exit code 1.
func Failed(format string, a ...any) error {
	return Error{Code: 1, Msg: fmt.Sprintf(format, a...)}
}
