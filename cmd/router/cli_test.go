package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/reference/cli.md from the kong model")

const cliReferencePath = "../../docs/reference/cli.md"

// cliReference is docs/reference/cli.md: the help of the router and of
// every command, as `router [COMMAND] --help` prints it.
func cliReference(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# The `router` command line\n\n")
	b.WriteString("<!-- Generated from the kong model of cmd/router/cli.go by\n     go test ./cmd/router -run TestCLIReference -update\n     Do not edit: the test fails when this page and the help disagree. -->\n\n")
	b.WriteString("Each section is what `router COMMAND --help` prints. Flags are GNU-style (`--flag value` or `--flag=value`); a value starting with `-` needs the `=` form (`--limit=-1`). ")
	b.WriteString("A flag with `($SIDESTREAM_…)` reads that environment variable when the flag is not given; an empty variable counts as unset. ")
	b.WriteString("Shell completion: `source <(router completion bash)` (or `zsh`; `router completion fish | source`).\n\n")
	b.WriteString("Exit codes: 0 done; 1 the work failed (a topology that does not load, a failing test, a demo whose conservation fails, a broker error); 2 the command line is wrong.\n\n")
	for _, cmd := range append([]string{""}, commandNames(t)...) {
		title := strings.TrimSpace("router " + cmd)
		b.WriteString("## " + title + "\n\n```text\n" + helpOf(t, cmd) + "```\n\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

func commandNames(t *testing.T) []string {
	t.Helper()
	parser, err := newParser(&cli{}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range parser.Model.Children {
		names = append(names, n.Name)
	}
	return names
}

// helpOf is what `router CMD --help` prints (CMD "": the router's).
func helpOf(t *testing.T, cmd string) string {
	t.Helper()
	args := []string{"--help"}
	if cmd != "" {
		args = []string{cmd, "--help"}
	}
	code, out, errs := run(t, args...)
	if code != 0 || errs != "" {
		t.Fatalf("%v: exit %d %q", args, code, errs)
	}
	return out
}

// TestCLIReference: docs/reference/cli.md is the help of every command;
// -update rewrites it.
func TestCLIReference(t *testing.T) {
	want := cliReference(t)
	if *update {
		if err := os.WriteFile(cliReferencePath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(cliReferencePath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s and the help disagree; run go test ./cmd/router -run TestCLIReference -update and review the diff", cliReferencePath)
	}
}

// flagsOf are the flags `router CMD` takes (with the global ones).
func flagsOf(t *testing.T) map[string][]string {
	t.Helper()
	parser, err := newParser(&cli{}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, n := range parser.Model.Children {
		for _, group := range n.AllFlags(false) {
			for _, f := range group {
				out[n.Name] = append(out[n.Name], "--"+f.Name)
			}
		}
	}
	return out
}

// TestDocsNameRealFlags: every `router COMMAND ... --flag` in the README
// and docs/ names a command that exists and a flag it takes (sections
// titled "Not yet" aside: they name what is to come).
func TestDocsNameRealFlags(t *testing.T) {
	flags := flagsOf(t)
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	invocation := regexp.MustCompile("router ([a-z]+)((?: +(?:\\.\\.\\.|[^\\s`|&;#()]+))*)")
	flag := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		future := false // a "Not yet" section names flags still to come
		for i, line := range bytes.Split(b, []byte("\n")) {
			if bytes.HasPrefix(line, []byte("#")) {
				future = bytes.Contains(bytes.ToLower(line), []byte("not yet"))
			}
			if future {
				continue
			}
			for _, m := range invocation.FindAllSubmatch(line, -1) {
				cmd := string(m[1])
				known, ok := flags[cmd]
				if !ok {
					continue // prose: "router is", "router stops"
				}
				for _, fl := range flag.FindAll(m[2], -1) {
					checked++
					if !slices.Contains(known, string(fl)) {
						t.Errorf("%s:%d: router %s has no flag %s", f, i+1, cmd, fl)
					}
				}
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d flags named in the docs were checked", checked)
	}
}

// TestCompletion: with COMP_LINE set (the shell's complete -C), the
// router prints the words that fit and exits 0; completion prints the
// hook for each shell.
func TestCompletion(t *testing.T) {
	t.Chdir("../..") // the file predictor does not take ../ (posener/complete)
	for line, want := range map[string][]string{
		"router ta":                       {"tail"},
		"router tail --fo":                {"--follow", "--format"},
		"router topology --format m":      {"mermaid"},
		"router demo --gen":               {"--generator"},
		"router validate examples/logs-b": {"examples/logs-by-level.yaml", "examples/logs-by-level.test.yaml"},
		"router tail examples/logs-b":     {"examples/logs-by-level.yaml"},
	} {
		t.Setenv("COMP_LINE", line)
		t.Setenv("COMP_POINT", "")
		code, out, errs := run(t)
		got := strings.Fields(out)
		for _, w := range want {
			if code != 0 || !slices.Contains(got, w) {
				t.Errorf("COMP_LINE=%q: exit %d, %q %q; want %s among them", line, code, out, errs, w)
			}
		}
	}
	os.Unsetenv("COMP_LINE")
	for shell, want := range map[string]string{"bash": "complete -o default -C ", "zsh": "bashcompinit", "fish": "complete -f -c router"} {
		if code, out, errs := run(t, "completion", shell); code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d %q %q", shell, code, out, errs)
		}
	}
	if code, _, _ := run(t, "completion", "tcsh"); code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2", code)
	}
}

// TestDemoCLI: the demo's help lists only what it takes (no --brokers),
// --brokers is refused with the reason, and the flags reach the demo:
// README's command runs to a conserved verdict.
func TestDemoCLI(t *testing.T) {
	help := helpOf(t, "demo")
	for _, f := range []string{"--brokers", "--config-file"} {
		if strings.Contains(help, f) {
			t.Errorf("demo --help lists %s", f)
		}
	}
	for _, f := range []string{"--input", "--records", "--kafka-port", "--linger"} {
		if !strings.Contains(help, f) {
			t.Errorf("demo --help lacks %s", f)
		}
	}
	if code, _, errs := run(t, "demo", "--brokers", "kafka:9092", "--records", "10"); code != 2 || !strings.Contains(errs, "the demo runs its own embedded Kafka") {
		t.Errorf("demo --brokers: exit %d %q", code, errs)
	}
	code, out, errs := run(t, "demo", "--records", "2000", "--quiet", "--listen", "127.0.0.1:0", "--guarantee", "at_least_once")
	if code != 0 || !strings.Contains(out, `"conservation":true`) || !strings.Contains(out, `"guarantee":"at_least_once"`) || !strings.Contains(out, `"produced":2000`) {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestHelpIsGNUStyle: every flag in every command's help is spelt with
// two dashes (-h aside), as the docs spell them.
func TestHelpIsGNUStyle(t *testing.T) {
	single := regexp.MustCompile(`(?m)^\s+-[a-z]{2,}`)
	for _, cmd := range append([]string{""}, commandNames(t)...) {
		if m := single.FindString(helpOf(t, cmd)); m != "" {
			t.Errorf("router %s --help has a single-dash flag: %q", cmd, m)
		}
	}
}

// TestTopologyAsFile: every command that reads a topology takes it as
// FILE (each case fails after the file is read, with what it holds).
func TestTopologyAsFile(t *testing.T) {
	bad := writeTopology(t, "security:\n  protocol: sasl_ssl\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"topology", example, "--format", "mermaid"}, 0, "flowchart"},
		{[]string{"validate", example}, 0, "ok (1 inputs, 3 routes"},
		{[]string{"tail", example, "--route", "errors"}, 2, `unknown route "errors"; this topology has: error (logs.error)`},
		{[]string{"redrive", example, "--from", "late", "--to", "logs"}, 2, `unknown route "late"`},
		{[]string{"run", bad, "--listen", "127.0.0.1:0"}, 1, bad + ":8:3: security.protocol is \"sasl_ssl\""},
		{[]string{"reset", bad}, 1, bad + ":8:3: security.protocol is \"sasl_ssl\""},
		{[]string{"demo", "../../examples/logs-avro.yaml", "--input", "../../examples/testdata/binary.bin"}, 2, `input "logs-avro" has format avro: --input sends JSON lines`},
	} {
		code, out, errs := run(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("%v: exit %d, %q %q; want %d and %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
}
