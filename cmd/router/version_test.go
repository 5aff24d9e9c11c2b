package main

import (
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	line := regexp.MustCompile(`^router \S+ \(revision \S+, go1\.\S+\)\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := run(t, args...)
		if code != 0 || !line.MatchString(out) {
			t.Errorf("%v: exit %d, %q %q; want one line matching %s", args, code, out, errs, line)
		}
	}
	if code, _, errs := run(t, "version", "extra"); code != 2 || !strings.HasPrefix(errs, "router version: unexpected argument extra\n") {
		t.Errorf("version extra: %d %q", code, errs)
	}
}

func TestBuildFrom(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}
	}
	for _, tc := range []struct {
		name, version, revision string
		bi                      *debug.BuildInfo
		want                    string
	}{
		{"go build in a checkout", "dev", "", vcs("abc123", "false"), "router dev (revision abc123, go1.26.0)"},
		{"modified tree", "dev", "", vcs("abc123", "true"), "router dev (revision abc123-dirty, go1.26.0)"},
		{"embedded wins over stamped", "v1.2.0", "stamped", vcs("abc123", "false"), "router v1.2.0 (revision abc123, go1.26.0)"},
		{"build.sh stamps", "v1.2.0", "def456", &debug.BuildInfo{GoVersion: "go1.26.0"}, "router v1.2.0 (revision def456, go1.26.0)"},
		{"go install at a version", "dev", "", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.3.0"}}, "router v1.3.0 (revision unknown, go1.26.0)"},
	} {
		if got := buildFrom(tc.version, tc.revision, tc.bi).String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
