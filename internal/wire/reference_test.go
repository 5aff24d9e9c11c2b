package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// contractName matches the constants that are on topics or metric labels:
// header names, stage, reason and changelog-loss codes, the drop reason.
var contractName = regexp.MustCompile(`^(Header[A-Z]\w*|Stage[A-Z]\w*|Reason[A-Z]\w*|Loss[A-Z]\w*|Drop[A-Z]\w*)$`)

// declaredContract returns the value of every contract constant this
// package declares (its non-test files), by value, with its name.
func declaredContract(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !contractName.MatchString(id.Name) || id.Name == "HeaderPrefix" || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[v] = id.Name
				}
			}
		}
	}
	return out
}

// pageRow is a table row of the reference page whose first cell is one
// code span: the name or code it documents.
var pageRow = regexp.MustCompile("^\\| `([^`]+)` \\|")

// TestReferencePageMatchesCode keeps docs/reference/wire.md true to this
// package: every header name and stage, reason, loss and drop code
// declared here has a row of the page, and every row names one declared
// here. A new reason without its row, or a row left after a rename, fails.
func TestReferencePageMatchesCode(t *testing.T) {
	declared := declaredContract(t)
	if len(declared) < 80 {
		t.Fatalf("found only %d contract constants: the scan is broken", len(declared))
	}
	b, err := os.ReadFile("../../docs/reference/wire.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		m := pageRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if rows[m[1]] {
			t.Errorf("docs/reference/wire.md:%d: %s has a second row", i+1, m[1])
		}
		rows[m[1]] = true
		if _, ok := declared[m[1]]; !ok {
			t.Errorf("docs/reference/wire.md:%d documents %s, which internal/wire does not declare", i+1, m[1])
		}
	}
	for v, name := range declared {
		if !rows[v] {
			t.Errorf("%s (%s) is declared in internal/wire but has no row in docs/reference/wire.md", v, name)
		}
	}
}
