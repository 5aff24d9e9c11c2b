package docscheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// commandTimeout bounds one command of a page (a demo of 2000 records
// takes about a second); readyTimeout a server's wait for /readyz and
// stopTimeout its exit after SIGTERM (ceilings for a loaded machine, not
// waits: the test goes on as soon as the condition holds).
const (
	commandTimeout = 2 * time.Minute
	readyTimeout   = 2 * time.Minute
	stopTimeout    = time.Minute
	helmBuild      = 15 * time.Minute // scripts/helm.sh builds Helm once into its cache
)

var fileInfo = regexp.MustCompile(`(?:^|\s)file=(\S+)`)

// step is one thing a page asks for, in page order: a file to write or a
// command to run.
type step struct {
	line    int    // where it starts in the page
	file    string // a file block's name, else ""
	body    string // the file's content, or the command
	mark    marker // a command's block marker
	command bool
}

// steps reads a page's marked blocks: ```LANG file=NAME blocks and
// ```sh {check ...} blocks, whose command lines (a trailing \ joins the
// next line; blank lines and # comments are skipped) each become a step.
// A marker that does not read, or whose brokers=LIST no command of its
// block names, fails the test.
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
		mk, ok, err := parseMarker(info)
		if err != nil {
			t.Errorf("%s:%d: %v", path, lines[start].n, err)
			continue
		}
		if !ok || !mk.check {
			continue
		}
		cmds := commands(body, mk)
		if mk.brokers != "" && !slices.ContainsFunc(cmds, func(s step) bool { return strings.Contains(s.body, mk.brokers) }) {
			t.Errorf("%s:%d: brokers=%s, but no command of the block names it", path, lines[start].n, mk.brokers)
		}
		out = append(out, cmds...)
	}
	return out
}

func commands(body []mdLine, mk marker) []step {
	var out []step
	var cur *step
	for _, l := range body {
		s := strings.TrimSpace(l.text)
		if cur == nil && (s == "" || strings.HasPrefix(s, "#")) {
			continue
		}
		if cur == nil {
			out = append(out, step{line: l.n, mark: mk, command: true})
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

// run runs one command (sh -c) in dir with env and returns its exit code
// and combined output.
func run(dir string, env []string, command string, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, out.String(), fmt.Errorf("timed out after %s", timeout)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), nil
	}
	return 0, out.String(), err
}

// serve runs a command that serves until stopped (router run): with
// SIDESTREAM_LISTEN on a free port, it waits until /readyz answers 200,
// sends SIGTERM and returns the exit code. The command runs as `exec
// COMMAND` so that the signal reaches it, not the shell.
func serve(dir string, env []string, command string) (int, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return -1, "", err
	}
	cmd := exec.Command("sh", "-c", "exec "+command)
	cmd.Dir, cmd.Env = dir, append(env, "SIDESTREAM_LISTEN="+addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return -1, "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func(why error) (int, string, error) {
		_ = cmd.Process.Kill()
		<-exited
		return -1, out.String(), why
	}
	for deadline := time.Now().Add(readyTimeout); !readyz(addr); {
		if time.Now().After(deadline) {
			return stop(fmt.Errorf("/readyz on %s did not answer 200 within %s", addr, readyTimeout))
		}
		select {
		case err := <-exited:
			return exitCode(err), out.String(), fmt.Errorf("ended before /readyz answered 200")
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return stop(err)
	}
	select {
	case err := <-exited:
		return exitCode(err), out.String(), nil
	case <-time.After(stopTimeout):
		return stop(fmt.Errorf("still running %s after SIGTERM", stopTimeout))
	}
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// readyz reports whether /readyz on addr answers 200.
func readyz(addr string) bool {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// freeAddr is a 127.0.0.1 address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
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
// in page order, against the router built from this tree, in a fresh
// folder per page holding the page's files. What a marker asks for beyond
// running the command (doc.go and docs/testing.md list the markers):
//
//   - dir=checkout runs the block in the repository root (`go install
//     ./cmd/router`), with GOBIN a temporary folder first on PATH, so the
//     installed router is the one the next command runs.
//   - kafka, brokers=LIST and topics=T1,T2 run the block against one
//     embedded Kafka per page (kfake, as in `router demo`), started with
//     the page's topics=... topics and named by SIDESTREAM_BROKERS (it
//     overrides a file's brokers, as a deployment's environment does);
//     LIST, where a command names it (kafka-1:9092 on the tutorial), is
//     replaced by its address.
//   - ready: each command serves until stopped; it gets SIDESTREAM_LISTEN
//     on a free port, and must answer 200 on /readyz within readyTimeout,
//     then exit with the expected code within stopTimeout of SIGTERM.
//   - helm=template: there is no cluster, so `helm install ARGS` runs as
//     `scripts/helm.sh template ARGS` (the same release, namespace, chart
//     and values; the chart path resolves through a `deploy` link to the
//     repository's). SIDESTREAM_SKIP_HELM=1 skips it, as in deploy/deploytest.
func TestSnippets(t *testing.T) {
	root := repoRoot(t)
	bin := t.TempDir()
	buildRouter(t, root, bin)
	for _, page := range checkedPages(t, root) {
		t.Run(strings.TrimSuffix(filepath.Base(page), ".md"), func(t *testing.T) {
			p := &pageRun{t: t, root: root, bin: bin, dir: t.TempDir(), page: page}
			all := steps(t, filepath.Join(root, page))
			p.startKafka(all)
			ran := 0
			for _, s := range all {
				if !s.command {
					p.write(s)
					continue
				}
				ran++
				p.run(s)
			}
			if ran == 0 {
				t.Errorf("%s has no ```sh {check} block", page)
			}
		})
	}
}

// pageRun is one page's run: its folder and, when a block asks, its
// embedded Kafka.
type pageRun struct {
	t                    *testing.T
	root, bin, dir, page string
	kafka                string // the embedded Kafka's address
	gobin                string // dir=checkout's GOBIN, one per page
}

// startKafka starts the page's embedded Kafka when a block needs it, with
// every topic a block names (topics the page says must exist already).
func (p *pageRun) startKafka(all []step) {
	var need bool
	var topics []string
	for _, s := range all {
		need = need || s.mark.kafka
		topics = append(topics, s.mark.topics...)
	}
	if !need {
		return
	}
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(3, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(c.Close)
	p.kafka = strings.Join(c.ListenAddrs(), ",")
}

func (p *pageRun) write(s step) {
	path := filepath.Join(p.dir, s.file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s.body), 0o644); err != nil {
		p.t.Fatalf("%s:%d: write %s: %v", p.page, s.line, s.file, err)
	}
}

// run runs one command as its marker says and fails the test on a wrong
// exit code.
func (p *pageRun) run(s step) {
	t, mk := p.t, s.mark
	where := fmt.Sprintf("%s:%d", p.page, s.line)
	dir, command := p.dir, s.body
	path := p.bin
	env := os.Environ()
	if mk.checkout {
		if p.gobin == "" {
			p.gobin = t.TempDir()
		}
		dir, path = p.root, p.gobin+string(os.PathListSeparator)+path
		env = append(env, "GOBIN="+p.gobin)
	}
	if mk.kafka {
		env = append(env, "SIDESTREAM_BROKERS="+p.kafka)
		if mk.brokers != "" {
			command = strings.ReplaceAll(command, mk.brokers, p.kafka)
		}
	}
	if mk.helm {
		var ok bool
		if command, ok = p.helmTemplate(where, command); !ok {
			return
		}
	}
	env = append(env, "PATH="+path+string(os.PathListSeparator)+os.Getenv("PATH"))
	var rc int
	var out string
	var err error
	began := time.Now()
	if mk.ready {
		rc, out, err = serve(dir, env, command)
	} else {
		rc, out, err = run(dir, env, command, commandTimeout)
	}
	t.Logf("%s: exit %d in %s: %s", where, rc, time.Since(began).Round(time.Millisecond), command)
	if err != nil || rc != mk.rc {
		t.Errorf("%s: %s\nran: %s\nexit %d (want %d) %v\n%s", where, s.body, command, rc, mk.rc, err, tail(out, 40))
	}
}

// helmTemplate turns `helm install ARGS` into `scripts/helm.sh template
// ARGS`, with Helm built (once) and the chart's path linked into the
// page's folder; ok is false when the step is skipped or cannot run.
func (p *pageRun) helmTemplate(where, command string) (string, bool) {
	t := p.t
	if os.Getenv("SIDESTREAM_SKIP_HELM") == "1" {
		t.Logf("%s: skipped (SIDESTREAM_SKIP_HELM=1)", where)
		return "", false
	}
	args, ok := strings.CutPrefix(command, "helm install ")
	if !ok {
		t.Errorf("%s: helm=template checks a `helm install` command, not %q", where, command)
		return "", false
	}
	helm := filepath.Join(p.root, "scripts", "helm.sh")
	if rc, out, err := run(p.root, os.Environ(), shellQuote(helm)+" --bin", helmBuild); err != nil || rc != 0 {
		t.Errorf("%s: scripts/helm.sh --bin: exit %d %v\n%s", where, rc, err, tail(out, 20))
		return "", false
	}
	link := filepath.Join(p.dir, "deploy")
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(filepath.Join(p.root, "deploy"), link); err != nil {
			t.Fatal(err)
		}
	}
	return shellQuote(helm) + " template " + args, true
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
