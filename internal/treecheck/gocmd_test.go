package treecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goSubcommands take package paths as arguments.
var goSubcommands = map[string]bool{"test": true, "build": true, "vet": true, "run": true, "install": true, "list": true, "generate": true}

// valueFlags are the go command's flags whose value is the next argument
// (-bench . is a pattern, not the current package).
var valueFlags = map[string]bool{"-run": true, "-bench": true, "-benchtime": true, "-count": true, "-fuzz": true, "-fuzztime": true, "-o": true, "-cpuprofile": true, "-memprofile": true, "-memprofilerate": true, "-blockprofile": true, "-mutexprofile": true, "-coverprofile": true, "-tags": true, "-timeout": true, "-p": true, "-parallel": true, "-cpu": true, "-list": true, "-skip": true, "-ldflags": true, "-gcflags": true, "-exec": true, "-covermode": true, "-coverpkg": true, "-trace": true, "-outputdir": true, "-shuffle": true}

// pkgArg is a package folder a go command names; tree says it ended in
// /... (the folder need not hold Go files itself).
type pkgArg struct {
	dir  string
	tree bool
}

var (
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	cmdSplit   = regexp.MustCompile(`&&|\|\||[;|]`)
	fenceStart = regexp.MustCompile("^\\s*(```|~~~)")
)

// commands returns the shell commands a markdown page shows, each with
// its line (for a prose span, its paragraph's first): every line of a
// fenced block (a line ending in \ joined to the next) and every inline
// code span of the prose (a span may cross a line break).
func commands(text string) (cmds []string, lines []int) {
	inFence := false
	var para []string
	paraAt := 0
	flush := func() {
		for _, m := range codeSpan.FindAllStringSubmatch(strings.Join(para, " "), -1) {
			cmds, lines = append(cmds, m[1]), append(lines, paraAt)
		}
		para = nil
	}
	src := strings.Split(text, "\n")
	for i := 0; i < len(src); i++ {
		l := src[i]
		if fenceStart.MatchString(l) {
			flush()
			inFence = !inFence
			continue
		}
		if inFence {
			at := i + 1
			for strings.HasSuffix(l, "\\") && i+1 < len(src) && !fenceStart.MatchString(src[i+1]) {
				i++
				l = strings.TrimSuffix(l, "\\") + " " + src[i]
			}
			cmds, lines = append(cmds, l), append(lines, at)
			continue
		}
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		if para == nil {
			paraAt = i + 1
		}
		para = append(para, l)
	}
	flush()
	return cmds, lines
}

// goPackageArgs returns the package folders ("./x" arguments) a command's
// go invocations name, relative to the repository: a preceding `cd DIR &&`
// in the same command moves them into DIR; `go run` is checked on its
// package only (what follows are the program's arguments). An absolute
// cd (a temporary folder) makes the rest of the command unchecked.
func goPackageArgs(cmd string) []pkgArg {
	var out []pkgArg
	dir := "."
	if i := strings.Index(cmd, " #"); i >= 0 {
		cmd = cmd[:i] // a shell comment
	}
	for _, seg := range cmdSplit.Split(cmd, -1) {
		f := strings.Fields(seg)
		if len(f) >= 2 && f[0] == "cd" {
			if strings.HasPrefix(f[1], "/") || strings.HasPrefix(f[1], "$") || strings.HasPrefix(f[1], "~") {
				return out
			}
			dir = filepath.Join(dir, f[1])
			continue
		}
		for i := 0; i+1 < len(f); i++ {
			if f[i] != "go" || !goSubcommands[f[i+1]] {
				continue
			}
			args := f[i+2:]
			for j, a := range args {
				if j > 0 && valueFlags[args[j-1]] {
					continue
				}
				a = strings.Trim(a, `'"`)
				if a != "." && !strings.HasPrefix(a, "./") {
					continue
				}
				tree := strings.HasSuffix(a, "...")
				p := strings.TrimSuffix(strings.TrimSuffix(a, "..."), "/")
				out = append(out, pkgArg{filepath.ToSlash(filepath.Join(dir, p)), tree})
				if f[i+1] == "run" {
					break
				}
			}
			break
		}
	}
	return out
}

// isPackageDir says whether dir (relative to root) holds Go files.
func isPackageDir(root, dir string) bool {
	m, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
	return len(m) > 0
}

// TestGoCommandsNameRealPackages: every `go test ./x` (build, vet, run,
// install, list, generate) a page shows, in a fenced block or inline,
// names a folder of Go files. Four commands once named ./pipeline after
// stage one moved to internal/stageone; nothing ran them.
func TestGoCommandsNameRealPackages(t *testing.T) {
	root := repoRoot(t)
	n := 0
	for _, page := range docPages(t, root) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		cmds, lines := commands(string(b))
		for i, c := range cmds {
			for _, p := range goPackageArgs(c) {
				n++
				if p.tree && !exists(root, p.dir) || !p.tree && !isPackageDir(root, p.dir) {
					t.Errorf("%s:%d: %q names ./%s, which holds no Go package", rel, lines[i], strings.TrimSpace(c), p.dir)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d go command packages: the scan is broken", n)
	}
}

// TestGoCommandsParsed checks the scan itself on a made-up page.
func TestGoCommandsParsed(t *testing.T) {
	page := "Run `go test\n./internal/x -run Y` here.\n\n```sh\nSIDESTREAM_A=1 go test -count=1 ./a/... \\\n  ./b\ncd bench && go test ./tracing -bench . # ./not-this\ngo run ./cmd/router demo --config ./ignored.yaml\ncd /tmp/x && go test ./nothing\n```\n"
	var got []string
	cmds, _ := commands(page)
	for _, c := range cmds {
		for _, p := range goPackageArgs(c) {
			got = append(got, p.dir)
		}
	}
	want := []string{"internal/x", "a", "b", "bench/tracing", "cmd/router"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
}
