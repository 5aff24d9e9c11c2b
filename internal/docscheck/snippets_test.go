package docscheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// commandTimeout bounds one command of a page (a demo of 2000 records
// takes about a second).
const commandTimeout = 2 * time.Minute

var (
	checkInfo = regexp.MustCompile(`\{check(?:\s+exit=(\d+))?\}`)
	fileInfo  = regexp.MustCompile(`(?:^|\s)file=(\S+)`)
)

// step is one thing a page asks for, in page order: a file to write or a
// command to run.
type step struct {
	line    int    // where it starts in the page
	file    string // a file block's name, else ""
	body    string // the file's content, or the command
	wantRC  int    // a command's expected exit code
	command bool
}

// steps reads a page's marked blocks: ```LANG file=NAME blocks and
// ```sh {check} blocks, whose command lines (a trailing \ joins the next
// line; blank lines and # comments are skipped) each become a step.
func steps(t *testing.T, path string) []step {
	t.Helper()
	var out []step
	lines := readLines(t, path)
	for i := 0; i < len(lines); i++ {
		m, info := fence(lines[i].text)
		if m == "" || !lines[i].fence {
			continue
		}
		start := i
		var body []mdLine
		for i++; i < len(lines); i++ {
			if m2, info2 := fence(lines[i].text); closes(m, m2, info2) {
				break
			}
			body = append(body, lines[i])
		}
		if f := fileInfo.FindStringSubmatch(info); f != nil {
			var b strings.Builder
			for _, l := range body {
				b.WriteString(l.text + "\n")
			}
			out = append(out, step{line: lines[start].n, file: f[1], body: b.String()})
			continue
		}
		c := checkInfo.FindStringSubmatch(info)
		if c == nil {
			continue
		}
		rc := 0
		if c[1] != "" {
			rc, _ = strconv.Atoi(c[1])
		}
		out = append(out, commands(body, rc)...)
	}
	return out
}

func commands(body []mdLine, rc int) []step {
	var out []step
	var cur *step
	for _, l := range body {
		s := strings.TrimSpace(l.text)
		if cur == nil && (s == "" || strings.HasPrefix(s, "#")) {
			continue
		}
		if cur == nil {
			out = append(out, step{line: l.n, wantRC: rc, command: true})
			cur = &out[len(out)-1]
		}
		if strings.HasSuffix(s, `\`) {
			cur.body += strings.TrimSpace(strings.TrimSuffix(s, `\`)) + " "
			continue
		}
		cur.body += s
		cur = nil
	}
	return out
}

// buildRouter builds cmd/router once into dir.
func buildRouter(t *testing.T, root, dir string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "router"), "./cmd/router")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/router: %v\n%s", err, out)
	}
}

// run runs one command in dir with bin first on PATH and returns its exit
// code and combined output.
func run(bin, dir, command string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, out.String(), fmt.Errorf("timed out after %s", commandTimeout)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), nil
	}
	return 0, out.String(), err
}

// checkedPages are the pages whose commands must run: each must hold at
// least one {check} block, so a lost marker fails too.
func checkedPages(t *testing.T, root string) []string {
	t.Helper()
	out := []string{"docs/tutorial.md"}
	recipes, err := filepath.Glob(filepath.Join(root, "docs", "recipes", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recipes {
		if filepath.Base(r) != "README.md" {
			out = append(out, "docs/recipes/"+filepath.Base(r))
		}
	}
	return out
}

// TestSnippets runs every marked command of the tutorial and the recipes
// in page order, against the router built from this tree.
func TestSnippets(t *testing.T) {
	root := repoRoot(t)
	bin := t.TempDir()
	buildRouter(t, root, bin)
	for _, page := range checkedPages(t, root) {
		t.Run(strings.TrimSuffix(filepath.Base(page), ".md"), func(t *testing.T) {
			dir := t.TempDir()
			ran := 0
			for _, s := range steps(t, filepath.Join(root, page)) {
				where := fmt.Sprintf("%s:%d", page, s.line)
				if !s.command {
					p := filepath.Join(dir, s.file)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(s.body), 0o644); err != nil {
						t.Fatalf("%s: write %s: %v", where, s.file, err)
					}
					continue
				}
				ran++
				rc, out, err := run(bin, dir, s.body)
				if err != nil || rc != s.wantRC {
					t.Errorf("%s: %s\nexit %d (want %d) %v\n%s", where, s.body, rc, s.wantRC, err, tail(out, 40))
				}
			}
			if ran == 0 {
				t.Errorf("%s has no ```sh {check} block", page)
			}
		})
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
