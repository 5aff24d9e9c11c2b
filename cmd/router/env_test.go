package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/sidestream/sidestream/internal/config"
)

func TestStaticMembershipFromEnv(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "TRUE": true, "t": true, "0": false, "false": false, "": false} {
		t.Setenv("SIDESTREAM_STATIC_MEMBERSHIP", v)
		var c cli
		parser, err := newParser(&c, io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		_, err = parser.Parse([]string{"run", "--config", example})
		if err != nil || c.Run.StaticMembership != want {
			t.Errorf("SIDESTREAM_STATIC_MEMBERSHIP=%q: static %v (err %v), want %v", v, c.Run.StaticMembership, err, want)
		}
	}
	t.Setenv("SIDESTREAM_STATIC_MEMBERSHIP", "yes please")
	if code, _, errs := run(t, "run", "--config", example); code != 2 || !strings.Contains(errs, `"yes please": use true or false (or 1, 0, t, f) (from envar SIDESTREAM_STATIC_MEMBERSHIP="yes please")`) {
		t.Errorf("a bad value: exit %d %q", code, errs)
	}
}

func TestUnknownEnvWarned(t *testing.T) {
	got := unknownEnv([]string{"SIDESTREAM_BROKER=k:9092", "SIDESTREAM_BROKERS=k:9092", "SIDESTREAM_IT_BROKERS=x", "SIDESTREAM_KAFKA_PORT=1", "SIDESTREAM_REGISTRY_PORT=18081", "SIDESTREAM_REGISTRY_URL=http://r", "HOME=/root", "SIDESTREAM_LOGLEVEL=debug"})
	if !slices.Equal(got, []string{"SIDESTREAM_BROKER", "SIDESTREAM_LOGLEVEL", "SIDESTREAM_REGISTRY_URL"}) {
		t.Errorf("unknownEnv = %q", got)
	}
	t.Setenv("SIDESTREAM_BROKER", "k:9092")
	code, _, errs := run(t, "run", "--config", filepath.Join(t.TempDir(), "missing.yaml"))
	if code == 0 || !strings.Contains(errs, "level=WARN") || !strings.Contains(errs, "variable=SIDESTREAM_BROKER did_you_mean=SIDESTREAM_BROKERS") {
		t.Errorf("router run with SIDESTREAM_BROKER set: exit %d, stderr %q", code, errs)
	}
}

// TestKnownEnvComplete: every SIDESTREAM_* name the router's code reads
// is known, so none is warned about.
func TestKnownEnvComplete(t *testing.T) {
	re := regexp.MustCompile(`"(SIDESTREAM_[A-Z_]+)"`)
	var files []string
	for _, dir := range []string{".", "../../internal/config", "../../internal/serve", "../../internal/runtime", "../../internal/demo"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == "env.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			n++
			if !knownEnv[m[1]] {
				t.Errorf("%s reads %s, which knownEnv lacks", f, m[1])
			}
		}
	}
	if n < 15 {
		t.Fatalf("found only %d SIDESTREAM_* names", n)
	}
}

// TestRunFlagsFromSettings: the flags of router run (kong's model of the
// cli struct) are the settings spec's (config.Settings): each with the
// spec's default and allowed values, each process flag read from the
// variable the spec names, and no flag of the spec missing (a spec flag
// of another command, Command, is looked up there).
func TestRunFlagsFromSettings(t *testing.T) {
	parser, err := newParser(new(cli), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]*kong.Flag{} // "command --name"
	for _, c := range parser.Model.Children {
		for _, f := range c.Flags {
			flags[c.Name+" --"+f.Name] = f
		}
	}
	seen := map[string]bool{}
	for _, s := range config.Settings {
		if s.Flag == "" {
			continue
		}
		cmd := s.Command
		if cmd == "" {
			cmd = "run"
		}
		f, ok := flags[cmd+" "+s.Flag]
		seen[cmd+" "+s.Flag] = true
		if !ok {
			t.Errorf("config.Settings declares %s %s, which router %s lacks", cmd, s.Flag, cmd)
			continue
		}
		checkFlag(t, s, f)
	}
	for key := range flags {
		if strings.HasPrefix(key, "run --") && !seen[key] {
			t.Errorf("router %s, which config.Settings lacks", key)
		}
	}
}

// checkFlag holds one flag to its setting: a process flag's default,
// allowed values and variable are the spec's; a file setting's variable
// is the config's to read, not the flag's.
func checkFlag(t *testing.T, s config.Setting, f *kong.Flag) {
	t.Helper()
	def := f.Default
	if def == "" && s.Type == "bool" {
		def = "false"
	}
	if s.Path == "" && def != s.Default {
		t.Errorf("%s defaults to %q, the spec says %q", s.Flag, f.Default, s.Default)
	}
	if s.Path == "" && f.Enum != strings.Join(s.Enum, ",") {
		t.Errorf("%s allows %q, the spec %q", s.Flag, f.Enum, s.Enum)
	}
	var want []string
	if s.Path == "" && s.Env != "" {
		want = []string{s.Env}
	}
	if !slices.Equal(f.Envs, want) {
		t.Errorf("%s reads %q, the spec names %q", s.Flag, f.Envs, want)
	}
}

// TestDocumentedEnvKnown: every SIDESTREAM_* variable the Helm chart, the
// docs, the README and the scripts name is one the router reads
// (config.Settings) or one of the repository's tools (toolEnvPrefixes), so
// a renamed variable cannot live on in the chart or the docs, and a tool's
// is never warned about. (docs/configuration.md's example of a misspelling
// is the one exception.)
func TestDocumentedEnvKnown(t *testing.T) {
	re := regexp.MustCompile(`SIDESTREAM_[A-Z0-9_]*[A-Z0-9]\b`)
	files := []string{"../../README.md"}
	for _, root := range []string{"../../docs", "../../deploy", "../../scripts"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if err == nil && !d.IsDir() && strings.Contains(".md.yaml.yml.tpl.txt.sh", filepath.Ext(path)) && filepath.Ext(path) != "" {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	n, reported := 0, map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range re.FindAllString(string(b), -1) {
			n++
			if name == "SIDESTREAM_BROKER" && filepath.Base(f) == "configuration.md" {
				continue // the misspelling the warning's example names
			}
			if unknown := unknownEnv([]string{name + "=x"}); len(unknown) > 0 && !reported[name] {
				reported[name] = true
				t.Errorf("%s names %s, which the router does not read (config.Settings) and no tool uses", f, name)
			}
		}
	}
	if n < 50 {
		t.Fatalf("found only %d SIDESTREAM_* names in the docs and the chart", n)
	}
}
