package docscheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var (
	// mdLink is an inline link or image target: [text](target "title").
	mdLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink is a reference definition: [name]: target.
	refLink = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)`)
	// htmlLink is an href or src attribute.
	htmlLink = regexp.MustCompile(`(?:href|src)="([^"]+)"`)
	// codeSpan is inline code, whose brackets are not links.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// knownBroken lists links that are broken today in pages this branch must
// not edit, keyed "page target": they are logged, not failed, and an entry
// that is no longer broken fails, so the list only shrinks.
var knownBroken = map[string]string{}

// pages returns README.md, DESIGN.md and every docs/**/*.md, relative to root.
func pages(t *testing.T, root string) []string {
	t.Helper()
	out := []string{"README.md", "DESIGN.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out[2:])
	return out
}

// brokenLinks returns page:line, target and why for every relative link of
// a page whose file or anchor does not exist.
func brokenLinks(t *testing.T, root, page string, cache map[string]map[string]bool) (out []broken, checked int) {
	t.Helper()
	for _, l := range readLines(t, filepath.Join(root, page)) {
		if l.fence {
			continue
		}
		text := codeSpan.ReplaceAllString(l.text, "")
		var targets []string
		for _, re := range []*regexp.Regexp{mdLink, refLink, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				targets = append(targets, m[1])
			}
		}
		checked += len(targets)
		for _, target := range targets {
			if why := checkTarget(t, root, page, target, cache); why != "" {
				out = append(out, broken{page + ":" + strconv.Itoa(l.n), target, why})
			}
		}
	}
	return out, checked
}

func checkTarget(t *testing.T, root, page, target string, cache map[string]map[string]bool) string {
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	file, _, _ = strings.Cut(file, "?")
	dest := page
	if file != "" {
		dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
		if dest == ".." || strings.HasPrefix(dest, "../") {
			return "outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
			return "no such file"
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	a, ok := cache[dest]
	if !ok {
		a = anchors(readLines(t, filepath.Join(root, dest)))
		cache[dest] = a
	}
	if !a[anchor] {
		return "no heading with anchor #" + anchor + " in " + dest
	}
	return ""
}

type broken struct{ where, target, why string }

func (b broken) String() string { return b.where + ": " + b.target + ": " + b.why }

// TestLinks checks every relative link and anchor of README.md, DESIGN.md
// and docs/**/*.md.
func TestLinks(t *testing.T) {
	root := repoRoot(t)
	cache := map[string]map[string]bool{}
	stillBroken := map[string]bool{}
	for _, page := range pages(t, root) {
		bad, checked := brokenLinks(t, root, page, cache)
		if checked == 0 && (page == "README.md" || page == "docs/tutorial.md") {
			t.Errorf("%s: no link found: the link pattern no longer matches", page)
		}
		for _, b := range bad {
			if _, ok := knownBroken[page+" "+b.target]; ok {
				stillBroken[page+" "+b.target] = true
				t.Logf("known broken, to fix in the README split: %s", b)
				continue
			}
			t.Error(b)
		}
	}
	for k := range knownBroken {
		if !stillBroken[k] {
			t.Errorf("knownBroken %q is no longer broken: remove it", k)
		}
	}
}
