package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
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
