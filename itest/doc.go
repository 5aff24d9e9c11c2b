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
// The schema registry tests (TestRegistryKillLoop, TestRegistryOutage)
// also need a real Confluent-compatible registry: SIDESTREAM_IT_REGISTRY
// is its base URL, as the last line of scripts/registry.sh up prints it;
// without it they skip. TestRegistryOutage stops the registry and starts
// it again itself, by running scripts/registry.sh stop and start with the
// test's environment, so SIDESTREAM_REGISTRY_PORT and
// SIDESTREAM_REGISTRY_DIR must be the ones the registry was started with
// (the test checks that the script's URL is SIDESTREAM_IT_REGISTRY, and
// that the registry stopped answering, and fails saying so otherwise;
// it starts the registry again if it ends early):
//
//	SIDESTREAM_REGISTRY_PORT=18081 scripts/registry.sh up
//	SIDESTREAM_IT_BROKERS=127.0.0.1:19092 SIDESTREAM_REGISTRY_PORT=18081 \
//	  SIDESTREAM_IT_REGISTRY=http://127.0.0.1:18081/apis/ccompat/v7 \
//	  go test ./itest -count=1 -v -run TestRegistry
//
// One benchmark lives here too, because it needs the same real broker and
// router processes: BenchmarkScaleOutPause (scaleout_bench_test.go), the
// output pause when a fourth router joins three, under the classic group
// protocol and KIP-848's; its doc comment gives the commands.
//
// The package owns no production code and must never be imported.
package itest
