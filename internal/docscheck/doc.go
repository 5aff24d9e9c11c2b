// Package docscheck holds the tests that keep the documentation runnable
// and navigable: every relative link and anchor in README.md, DESIGN.md
// and docs/ resolves, and every shell block of docs/ marked runnable runs
// against the router built from this tree (on its embedded Kafka). It has
// no code of its own.
//
// Markers, in a page's fenced blocks (attributes combine, as in
// {check brokers=kafka-1:9092 topics=logs ready}):
//
//	```sh {check}            each command line runs (sh -c) and must exit 0
//	```sh {check exit=1}     ... and must exit 1 (e.g. router plan on a breaking change)
//	dir=checkout             ... in the repository root, GOBIN a temporary folder first on PATH
//	kafka                    ... against the page's embedded Kafka, named by SIDESTREAM_BROKERS
//	brokers=LIST             ... and LIST in a command is replaced by its address
//	topics=T1,T2             ... which holds these topics from its start
//	ready                    ... as a server: /readyz 200, then SIGTERM and a clean exit
//	helm=template            ... `helm install ARGS` as scripts/helm.sh template ARGS
//	```sh {nocheck reason="..."}  not run: only where marker_test.go's uncheckedBlocks allows
//	```yaml file=first.yaml  the block is written to first.yaml before the commands after it run
//
// A page's commands run in order in a fresh folder holding the page's
// files, with the router binary first on PATH as `router`.
// TestShellBlocksMarked fails on a shell block of the tutorial or the
// recipes without a marker; docs/testing.md says the same for readers.
package docscheck
