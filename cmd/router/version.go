package main

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/sidestream/sidestream/internal/serve"
)

// revision is stamped by scripts/build.sh (-ldflags "-X main.revision=..."),
// which builds with -buildvcs=false so that a build needs no git; a plain
// `go build` or `go install` in a checkout has Go embed vcs.revision
// instead, and that wins.
var revision = ""

// buildInfo is what `router version` prints and sidestream_build_info
// carries.
type buildInfo struct {
	version   string // main.version, else the module version Go recorded
	revision  string // the VCS revision (with "-dirty" for modified trees), else "unknown"
	goVersion string
}

func currentBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildFrom(version, revision, bi)
}

// buildFrom merges the stamped values with the build information Go
// embedded (bi may be nil).
func buildFrom(stampedVersion, stampedRevision string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{version: stampedVersion, revision: stampedRevision, goVersion: runtime.Version()}
	if bi == nil {
		return b.withDefaults()
	}
	b.goVersion = bi.GoVersion
	if (b.version == "" || b.version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.version = bi.Main.Version
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		if modified {
			rev += "-dirty"
		}
		b.revision = rev
	}
	return b.withDefaults()
}

func (b buildInfo) withDefaults() buildInfo {
	if b.version == "" {
		b.version = "dev"
	}
	if strings.TrimSpace(b.revision) == "" {
		b.revision = "unknown"
	}
	return b
}

// String is the line `router version` prints.
func (b buildInfo) String() string {
	return "router " + b.version + " (revision " + b.revision + ", " + b.goVersion + ")"
}

// serve is the build as internal/serve takes it.
func (b buildInfo) serve() serve.Build {
	return serve.Build{Version: b.version, Revision: b.revision, GoVersion: b.goVersion}
}
