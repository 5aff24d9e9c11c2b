// Package itest holds sidestream's integration tests: the router binary,
// run as real separate processes, against a real Apache Kafka broker
// (scripts/kafka.sh), under faults: kill -9 loops, scale out and in,
// a frozen zombie, a broker bounce, at-least-once duplicates and a
// graceful stop. Every scenario checks its outputs with a read_committed
// read-back against the generator's oracle (internal/gen), never against
// the router's own counters.
//
// The tests run only when SIDESTREAM_IT_BROKERS names the broker:
//
//	scripts/install-deps.sh && scripts/kafka.sh up
//	SIDESTREAM_IT_BROKERS=127.0.0.1:19092 go test ./itest -count=1 -v -timeout 20m
//
// The package owns no production code and must never be imported.
package itest
