package docscheck

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readmeLimit is the front door's length: what it is, the two commands,
// a five-minute path and links; everything else lives in docs/.
const readmeLimit = 250

// TestReadmeIsAFrontDoor: README.md stays short.
func TestReadmeIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > readmeLimit {
		t.Fatalf("README.md has %d lines, want at most %d: move the detail into a docs/ page and link it", n, readmeLimit)
	}
}

// TestDocsIndexComplete: docs/README.md links every page of docs/, so a
// new page is found by browsing, not by searching.
func TestDocsIndexComplete(t *testing.T) {
	root := repoRoot(t)
	index, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(root, "docs"), path)
		rel = filepath.ToSlash(rel)
		if rel == "README.md" {
			return nil
		}
		n++
		if !bytes.Contains(index, []byte("("+rel+")")) {
			t.Errorf("docs/README.md does not link docs/%s: add its one line", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("found only %d pages under docs/", n)
	}
}
