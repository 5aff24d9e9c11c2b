// Package aggfn names the aggregate functions of a window route
// (routes[].window.aggregates[].fn): the one list the config model checks
// a topology against and the window operator parses, so the two cannot
// disagree. It imports nothing: both sides, which must not import each
// other, import it.
package aggfn
