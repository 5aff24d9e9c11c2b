//go:build race

package stageone

// raceBuild: the race detector is on; sync.Pool then drops some of what
// is put back, so allocation counts through a pool are not exact.
const raceBuild = true
