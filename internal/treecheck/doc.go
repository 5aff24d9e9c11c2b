// Package treecheck holds the tests that keep the tree's own words true:
// every repository path named in a Go comment, in DESIGN.md or in docs/
// exists. It has no code of its own.
package treecheck
