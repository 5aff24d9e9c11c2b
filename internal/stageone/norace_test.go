//go:build !race

package stageone

// raceBuild: the race detector is on (race_test.go).
const raceBuild = false
