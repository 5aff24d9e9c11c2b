// Package config owns the topology file: the YAML model, its loading
// with positions and ${VAR}, its defaults, the environment and flag
// overrides, and its validation with FILE:LINE:COL messages (expressions
// compiled and type-checked against the inputs' schemas). Every
// setting is declared once, in Settings (settings.go): the defaults Load
// applies, the SIDESTREAM_* variables the router knows and
// docs/reference/config.md are read from it, and its tests fail when any
// of them disagrees.
//
// It must never import another sidestream package (but internal/aggfn,
// the aggregate names it shares with the window operator) nor talk to a
// broker: everything here is checkable offline, by `router validate`.
package config
