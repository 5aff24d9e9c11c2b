package treecheck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cmdLimit is the most non-test lines cmd/router may hold: flags and one
// call per subcommand; an application grows in a package of its own.
const cmdLimit = 1200

func TestCmdRouterStaysThin(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "cmd", "router", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(b, []byte("\n"))
	}
	if n == 0 || n > cmdLimit {
		t.Fatalf("cmd/router holds %d non-test lines, want 1..%d: move what is not flags and wiring into a package under internal/", n, cmdLimit)
	}
	t.Logf("cmd/router: %d non-test lines", n)
}
