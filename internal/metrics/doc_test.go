package metrics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReferenceNamesEveryMetric keeps docs/reference/metrics.md true to
// this package: every metric name declared here (a Name* constant) has a
// row of the page's table (or of docs/assembly.md's, for the
// sidestream_assembly_* row that points there), and every name in the
// first column of the page's rows is declared here.
func TestReferenceNamesEveryMetric(t *testing.T) {
	ref := rowNames(t, "../../docs/reference/metrics.md")
	asm := rowNames(t, "../../docs/assembly.md")
	names := declaredNames(t)
	if len(names) < 40 {
		t.Fatalf("found only %d Name* constants", len(names))
	}
	for name := range names {
		if !ref[name] && !asm[name] {
			t.Errorf("%s is declared in internal/metrics but has no row in docs/reference/metrics.md", name)
		}
	}
	for name := range ref {
		if !names[name] {
			t.Errorf("docs/reference/metrics.md has a row for %s, which internal/metrics does not declare", name)
		}
	}
}

// rowNames is the metric names in the first column of a page's table
// rows (wildcards like sidestream_kafka_* aside).
func rowNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `sidestream_") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, f := range strings.Split(first, "`") {
			if strings.HasPrefix(f, "sidestream_") && !strings.HasSuffix(f, "*") {
				out[f] = true
			}
		}
	}
	return out
}

// declaredNames reads the string Name* constants of this package's
// files.
func declaredNames(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Name") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(v, Namespace+"_") {
						names[v] = true
					}
				}
			}
			return false
		})
	}
	return names
}
