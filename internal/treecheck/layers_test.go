package treecheck

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	layerPkg     = regexp.MustCompile(`internal/[A-Za-z0-9_/*]+`)
	layerComment = regexp.MustCompile(`\([^)]*\)`)
)

// layers reads DESIGN.md's Layers block: each package it draws (a
// trailing /* names a folder's packages) and its layer, 0 at the top. An
// arrow opens the next layer down; a line without one continues the
// layer above it.
func layers(t *testing.T, root string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## Layers\n")
	if i < 0 {
		t.Fatal("DESIGN.md has no Layers section")
	}
	s = s[i:]
	start := strings.Index(s, "```\n")
	end := strings.Index(s[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal("DESIGN.md's Layers section has no code block")
	}
	drawn := map[string]int{}
	level := 0
	for _, line := range strings.Split(s[start+4:start+4+end], "\n") {
		line = layerComment.ReplaceAllString(line, "")
		for j, part := range strings.Split(line, "->") {
			if j > 0 {
				level++
			}
			for _, p := range layerPkg.FindAllString(part, -1) {
				p = strings.TrimRight(p, "/")
				if _, twice := drawn[p]; twice {
					t.Errorf("DESIGN.md's Layers block draws %s twice", p)
				}
				drawn[p] = level
			}
		}
	}
	return drawn
}

// layerOf is the layer the block draws pkg at, found by its own name or
// a folder/* entry.
func layerOf(drawn map[string]int, pkg string) (int, bool) {
	if l, ok := drawn[pkg]; ok {
		return l, true
	}
	for p, l := range drawn {
		if dir, ok := strings.CutSuffix(p, "/*"); ok && strings.HasPrefix(pkg, dir+"/") {
			return l, true
		}
	}
	return 0, false
}

// internalPackages maps each folder of internal/ that holds code (a Go
// file that is neither a test nor doc.go) to the packages of ours its
// code imports (its tests' imports aside).
func internalPackages(t *testing.T, root string) map[string][]string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module"))
	pkgs := map[string][]string{}
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(path string, e os.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		if e.Name() == "testdata" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		code, _ := filepath.Glob(filepath.Join(path, "*.go"))
		for _, f := range code {
			if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == "doc.go" {
				continue
			}
			if pkgs[rel] == nil {
				pkgs[rel] = []string{}
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if ours, ok := strings.CutPrefix(p, module+"/"); ok {
					pkgs[rel] = append(pkgs[rel], ours)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestLayersPlaceEveryPackage: every package of internal/ that holds
// code is drawn in DESIGN.md's Layers block, every package the block
// draws exists, and no package's code imports one drawn above it. The
// test-only folders (docscheck, membound, treecheck) hold no code and are
// not drawn.
func TestLayersPlaceEveryPackage(t *testing.T) {
	root := repoRoot(t)
	drawn := layers(t, root)
	pkgs := internalPackages(t, root)
	if len(drawn) < 20 || len(pkgs) < 20 {
		t.Fatalf("the Layers block draws %d packages and internal/ holds %d: the parse is broken", len(drawn), len(pkgs))
	}
	for p := range drawn {
		if dir, ok := strings.CutSuffix(p, "/*"); ok {
			if matches, _ := filepath.Glob(filepath.Join(root, dir, "*", "*.go")); len(matches) == 0 {
				t.Errorf("DESIGN.md's Layers block draws %s, which names no package", p)
			}
			continue
		}
		if _, ok := pkgs[p]; !ok {
			t.Errorf("DESIGN.md's Layers block draws %s, which is not a package with code", p)
		}
	}
	for p, imports := range pkgs {
		lp, ok := layerOf(drawn, p)
		if !ok {
			t.Errorf("%s is not in DESIGN.md's Layers block: draw it at the layer its imports put it", p)
			continue
		}
		for _, q := range imports {
			if lq, ok := layerOf(drawn, q); ok && lq < lp {
				t.Errorf("%s (layer %d) imports %s, drawn above it (layer %d) in DESIGN.md's Layers block", p, lp, q, lq)
			}
		}
	}
}
