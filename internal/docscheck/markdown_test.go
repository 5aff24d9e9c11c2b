package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

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

// mdLine is one line of a markdown page with its fence context.
type mdLine struct {
	n     int    // 1-based line number
	text  string // the line
	fence bool   // inside a fenced block (the fence lines themselves included)
}

// fence returns the fence marker a line opens or closes (``` or ~~~,
// possibly longer) and the info string after it, or "" for other lines.
func fence(line string) (marker, info string) {
	s := strings.TrimLeft(line, " \t")
	for _, c := range []byte{'`', '~'} {
		i := 0
		for i < len(s) && s[i] == c {
			i++
		}
		if i >= 3 {
			return s[:i], strings.TrimSpace(s[i:])
		}
	}
	return "", ""
}

// closes reports whether a fence line closes the block opened by open: the
// same character, at least as long, and no info string.
func closes(open, m, info string) bool {
	return open != "" && m != "" && info == "" && m[0] == open[0] && len(m) >= len(open)
}

func readLines(t *testing.T, path string) []mdLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []mdLine
	open, openedAt := "", 0
	for i, l := range strings.Split(string(b), "\n") {
		m, info := fence(l)
		switch {
		case open == "" && m != "":
			open, openedAt = m, i+1
			out = append(out, mdLine{i + 1, l, true})
		case closes(open, m, info):
			open = ""
			out = append(out, mdLine{i + 1, l, true})
		default:
			out = append(out, mdLine{i + 1, l, open != ""})
		}
	}
	if open != "" {
		t.Errorf("%s:%d: a fenced block is never closed (a closing fence has no info string)", path, openedAt)
	}
	return out
}

var (
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// slug is GitHub's anchor for a heading: the rendered text lowercased,
// every character but letters, digits, spaces, '-' and '_' dropped,
// spaces turned into '-'.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns every anchor a page defines: its headings' slugs (a
// repeated slug gets -1, -2, ... as on GitHub) and explicit <a id>/<a name>.
func anchors(lines []mdLine) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range lines {
		if l.fence {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(l.text, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}
