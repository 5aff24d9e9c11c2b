//go:build !race

package runtime

// stageTwoRecords is the size of the registry stage-two component tests
// in a plain build (scripts/test.sh runs them there too; the race run
// takes the smaller size in registry_stagetwo_size_race_test.go).
const stageTwoRecords = 100_000
