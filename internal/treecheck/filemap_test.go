package treecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mapDir  = regexp.MustCompile(`^(\S+/)\s{2,}\S`)
	mapFile = regexp.MustCompile(`^((?:  )+)(\S+)\s+\S`)
)

// fileMap reads DESIGN.md's file map: each listed Go file's path, and
// the folders whose Go files it lists.
func fileMap(t *testing.T, root string) (files map[string]bool, dirs []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## File map")
	if i < 0 {
		t.Fatal("DESIGN.md has no File map section")
	}
	s = s[i:]
	start := strings.Index(s, "```\n")
	end := strings.Index(s[start+4:], "```")
	files = map[string]bool{}
	var stack []string // folder at each depth
	for _, line := range strings.Split(s[start+4:start+4+end], "\n") {
		if m := mapDir.FindStringSubmatch(line); m != nil {
			stack = []string{strings.TrimPrefix(m[1], "./")}
			dirs = appendListed(dirs, stack[0])
			continue
		}
		m := mapFile.FindStringSubmatch(line)
		if m == nil || len(stack) == 0 {
			continue
		}
		depth := len(m[1]) / 2
		if depth > len(stack) {
			t.Fatalf("DESIGN.md file map: %q is indented under nothing", line)
		}
		stack = stack[:depth]
		name := m[2]
		if strings.HasSuffix(name, "/") {
			stack = append(stack, stack[depth-1]+name)
			dirs = appendListed(dirs, stack[depth])
			continue
		}
		dir := stack[depth-1]
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		files[dir+name] = true
	}
	return files, dirs
}

// appendListed adds a folder whose Go files the map must list: the
// binary, the public package and everything under internal/ (the other
// top-level folders get one summary line).
func appendListed(dirs []string, dir string) []string {
	if dir == "" || dir == "cmd/router/" || strings.HasPrefix(dir, "internal/") {
		return append(dirs, dir)
	}
	return dirs
}

// TestFileMapTrue: every file DESIGN.md's map lists exists, and every Go
// file (tests and doc.go aside) of a folder it lists files of is listed.
func TestFileMapTrue(t *testing.T) {
	root := repoRoot(t)
	files, dirs := fileMap(t, root)
	if len(files) < 100 {
		t.Fatalf("the file map lists only %d files: the parse is broken", len(files))
	}
	for f := range files {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("DESIGN.md's file map lists %s, which does not exist", f)
		}
	}
	listed := map[string]bool{}
	for _, d := range dirs {
		listed[d] = true
	}
	// Every folder of internal/ with code of its own has its line.
	_ = filepath.WalkDir(filepath.Join(root, "internal"), func(path string, e os.DirEntry, err error) error {
		if err != nil || !e.IsDir() || e.Name() == "testdata" {
			if e != nil && e.Name() == "testdata" {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel) + "/"
		code, _ := filepath.Glob(filepath.Join(path, "*.go"))
		for _, f := range code {
			if !strings.HasSuffix(f, "_test.go") && filepath.Base(f) != "doc.go" && !listed[rel] {
				t.Errorf("%s holds code but has no line in DESIGN.md's file map", rel)
				break
			}
		}
		return nil
	})
	for _, d := range dirs {
		got, err := filepath.Glob(filepath.Join(root, d, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			rel, _ := filepath.Rel(root, g)
			rel = filepath.ToSlash(rel)
			if strings.HasSuffix(rel, "_test.go") || filepath.Base(rel) == "doc.go" || files[rel] {
				continue
			}
			t.Errorf("%s is not in DESIGN.md's file map (one line under %s)", rel, d)
		}
	}
}
