//go:build !race

package pipeline

// raceBuild: the race detector is on (race_test.go).
const raceBuild = false
