package treecheck

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// roots are the top-level folders a path in prose starts with: a token
// like internal/runtime/txn.go or scripts/kafka.sh names a file of the
// repository, and must exist.
var roots = []string{"cmd/", "internal/", "itest/", "bench/", "examples/", "deploy/", "docs/", "scripts/", ".ci/"}

// pathToken is a run of path characters; a trailing sentence dot or a
// line:col suffix is trimmed before the check.
var pathToken = regexp.MustCompile(`[A-Za-z0-9_.*/-]+`)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("repository root not at %s: %v", dir, err)
	}
	return dir
}

// foreign marks a line that speaks of another project's files (franz-go's
// pkg/kgo/txn.go, Kafka's or Flink's sources): its paths are not ours.
var foreign = regexp.MustCompile(`(?i)franz-go|kafka streams|apache/|flink|benthos|watermill|goka|prometheus|github\.com|redpanda|kgo/|kmsg/|expr-lang|hamba|pebble's|yaml\.v3|helm's|strimzi|bitnami`)

// candidates returns the tokens of a line that name repository paths: a
// token under one of the roots, or any token with a slash ending in .go (relative to the
// repository, to the file's folder or to its parent).
func candidates(line string) (rooted, relative []string) {
	if foreign.MatchString(line) {
		return nil, nil
	}
	for _, tok := range pathToken.FindAllString(line, -1) {
		tok = strings.TrimRight(tok, ".,:;-")
		tok = strings.TrimPrefix(tok, "./")
		if strings.Contains(tok, "/.../") {
			continue // an elided path (src/main/java/.../X.java)
		}
		isRooted := false
		for _, r := range roots {
			if strings.HasPrefix(tok, r) && len(tok) > len(r) {
				rooted, isRooted = append(rooted, tok), true
				break
			}
		}
		if !isRooted && strings.Contains(tok, "/") && strings.HasSuffix(tok, ".go") && !strings.HasPrefix(tok, "/") {
			relative = append(relative, tok)
		}
	}
	return rooted, relative
}

// exists says whether a named path (a glob where it has a *) exists.
func exists(root, p string) bool {
	full := filepath.Join(root, filepath.FromSlash(p))
	if strings.Contains(p, "*") {
		m, _ := filepath.Glob(full)
		return len(m) > 0
	}
	_, err := os.Stat(full)
	return err == nil
}

// check reads one file and reports every named path that does not exist;
// comments only selects the lines (or line ends) of Go comments.
func check(t *testing.T, root, file string, commentsOnly bool) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if commentsOnly {
			i := strings.Index(text, "//")
			if i < 0 {
				continue
			}
			text = text[i+2:]
		}
		rooted, relative := candidates(text)
		rel, _ := filepath.Rel(root, file)
		for _, p := range rooted {
			n++
			if !exists(root, p) {
				t.Errorf("%s:%d names %s, which does not exist", rel, line, p)
			}
		}
		dir := filepath.Dir(file)
		for _, p := range relative {
			n++
			if !exists(root, p) && !exists(dir, p) && !exists(filepath.Dir(dir), p) {
				t.Errorf("%s:%d names %s, which does not exist", rel, line, p)
			}
		}
	}
	return n
}

// historyPages are the pages of dated records: their paths and commands
// are kept as they were when run, so the checks below skip them.
var historyPages = map[string]bool{"docs/benchmarks-history.md": true}

// docPages returns README.md, CONTRIBUTING.md, DESIGN.md and every
// docs/**/*.md but the history pages, as absolute paths.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	out := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CONTRIBUTING.md"), filepath.Join(root, "DESIGN.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if !d.IsDir() && strings.HasSuffix(p, ".md") && !historyPages[filepath.ToSlash(rel)] {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNamedPathsExist: a comment, a design note or a docs page that names
// a file must stay true when the file moves (three did not: a moved
// decode.go among them).
func TestNamedPathsExist(t *testing.T) {
	root := repoRoot(t)
	n := 0
	for _, page := range docPages(t, root) {
		if filepath.Base(page) != "DESIGN.md" {
			n += check(t, root, page, false)
		}
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (strings.HasPrefix(name, ".") && path != root || name == "testdata" || name == "node_modules" || name == "dist") {
			return filepath.SkipDir
		}
		switch {
		case strings.HasSuffix(name, ".go"):
			n += check(t, root, path, true)
		case path == filepath.Join(root, "DESIGN.md"):
			n += check(t, root, path, false)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("found only %d named paths: the scan is broken", n)
	}
}

// TestDesignStaysInside: DESIGN.md points only into the repository.
func TestDesignStaysInside(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "../") {
			t.Errorf("DESIGN.md:%d points outside the repository: %s", i+1, strings.TrimSpace(line))
		}
	}
}
