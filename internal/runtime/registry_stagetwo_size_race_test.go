//go:build race

package runtime

// stageTwoRecords is the size of the registry stage-two component tests
// under the race detector, which slows them several times over: the
// 100,000-record size runs in a plain build (scripts/test.sh runs it).
const stageTwoRecords = 10_000
