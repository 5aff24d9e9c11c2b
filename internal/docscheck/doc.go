// Package docscheck holds the tests that keep the documentation runnable
// and navigable: every relative link and anchor in README.md, DESIGN.md
// and docs/ resolves, and every shell block of docs/ marked runnable runs
// against the router built from this tree (on its embedded Kafka). It has
// no code of its own.
//
// Markers, in a page's fenced blocks:
//
//	```sh {check}            each command line runs (sh -c) and must exit 0
//	```sh {check exit=1}     ... and must exit 1 (e.g. router plan on a breaking change)
//	```yaml file=first.yaml  the block is written to first.yaml before the commands after it run
//
// A page's commands run in order in a fresh folder holding the page's
// files, with the router binary first on PATH as `router`.
package docscheck
