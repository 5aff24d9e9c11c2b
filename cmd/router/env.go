package main

import (
	"log/slog"
	"sort"
	"strings"

	"github.com/sidestream/sidestream/internal/config"
)

// knownEnv are the SIDESTREAM_* variables the router reads: the
// settings spec's (config.Settings), so a variable is added in one place.
var knownEnv = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range config.EnvNames() {
		m[n] = true
	}
	return m
}()

// toolEnvPrefixes are the repository's test and script settings
// (scripts/kafka.sh, registry.sh, connect.sh, elasticsearch.sh, test.sh,
// ui-test.sh, helm.sh, lint.sh, release.sh, compat.sh, the integration
// and memory tests), not the router's. registry.sh's are named in full: a
// SIDESTREAM_REGISTRY_URL is a misspelt SIDESTREAM_SCHEMA_REGISTRY_URL.
var toolEnvPrefixes = []string{"SIDESTREAM_IT_", "SIDESTREAM_KAFKA_", "SIDESTREAM_REGISTRY_PORT", "SIDESTREAM_REGISTRY_DIR", "SIDESTREAM_REGISTRY_HEAP_OPTS", "SIDESTREAM_REGISTRY_START_TIMEOUT", "SIDESTREAM_REGISTRY_STOP_TIMEOUT", "SIDESTREAM_CONNECT_", "SIDESTREAM_MARIADB_", "SIDESTREAM_SKIP_", "SIDESTREAM_CACHE", "SIDESTREAM_FUZZTIME", "SIDESTREAM_TEST_LOG", "SIDESTREAM_UI_", "SIDESTREAM_MEMBOUND_", "SIDESTREAM_HELM_", "SIDESTREAM_GOLANGCI_", "SIDESTREAM_RELEASE_", "SIDESTREAM_CYCLONEDX_", "SIDESTREAM_COMPAT_", "SIDESTREAM_ELASTICSEARCH_"}

// unknownEnv lists, sorted, the SIDESTREAM_* variables of environ the
// router does not read: most likely misspelt (SIDESTREAM_BROKER).
func unknownEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "SIDESTREAM_") || knownEnv[name] {
			continue
		}
		tool := false
		for _, p := range toolEnvPrefixes {
			tool = tool || strings.HasPrefix(name, p)
		}
		if !tool {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// warnUnknownEnv logs one WARN per unknown SIDESTREAM_* variable, with the
// closest known name.
func warnUnknownEnv(log *slog.Logger, environ []string) {
	names := make([]string, 0, len(knownEnv))
	for n := range knownEnv {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range unknownEnv(environ) {
		args := []any{"variable", name}
		if near := closestName(name, names); near != "" {
			args = append(args, "did_you_mean", near)
		}
		log.Warn("unknown SIDESTREAM_* environment variable; the router does not read it", args...)
	}
}

// closestName is the candidate sharing the longest prefix with name and
// at most 3 characters apart in length, "" when none shares more than the
// SIDESTREAM_ prefix.
func closestName(name string, candidates []string) string {
	best, bestN := "", len("SIDESTREAM_")
	for _, c := range candidates {
		n := 0
		for n < len(c) && n < len(name) && c[n] == name[n] {
			n++
		}
		if d := len(c) - len(name); n > bestN && d >= -3 && d <= 3 {
			best, bestN = c, n
		}
	}
	return best
}
