package plan

import (
	"testing"

	"github.com/sidestream/sidestream/internal/golden"
)

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}
