// Package treecheck holds the tests that keep the tree's own words true:
// every repository path named in a Go comment, in DESIGN.md, README.md,
// CONTRIBUTING.md or docs/ exists, and every package a go command in those
// pages names holds Go files (docs/benchmarks-history.md, a dated record,
// aside). It has no code of its own.
package treecheck
