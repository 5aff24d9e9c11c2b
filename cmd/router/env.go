package main

import (
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/sidestream/sidestream/topology"
)

// knownEnv are the SIDESTREAM_* variables the router reads.
var knownEnv = map[string]bool{
	"SIDESTREAM_CONFIG": true, "SIDESTREAM_BROKERS": true, "SIDESTREAM_APPLICATION_ID": true,
	"SIDESTREAM_GUARANTEE": true, "SIDESTREAM_COMMIT_INTERVAL": true, "SIDESTREAM_LISTEN": true,
	"SIDESTREAM_INSTANCE_ID": true, "SIDESTREAM_OWNER_URL_TEMPLATE": true, "SIDESTREAM_STATIC_MEMBERSHIP": true,
	"SIDESTREAM_LOG_LEVEL": true, "SIDESTREAM_LOG_FORMAT": true, "SIDESTREAM_AUDIT_MYSQL_DSN": true,
	topology.EnvSecurityProtocol: true, topology.EnvSASLMechanism: true, topology.EnvSASLUsername: true,
	topology.EnvRegistryURL: true, topology.EnvRegistryUsername: true, topology.EnvRegistryPassword: true,
	topology.EnvRegistryFetchTimeout: true, topology.EnvRegistryUnknownIDTTL: true, topology.EnvRegistryTLSCAFile: true,
	topology.EnvRegistryTLSCertFile: true, topology.EnvRegistryTLSKeyFile: true,
	topology.EnvSASLPassword: true, topology.EnvSASLOAuthTokenURL: true, topology.EnvSASLOAuthClientID: true,
	topology.EnvSASLOAuthClientSecret: true, topology.EnvSASLOAuthScopes: true, topology.EnvTLSCAFile: true, topology.EnvTLSCertFile: true,
	topology.EnvTLSKeyFile: true, topology.EnvTLSServerName: true, topology.EnvTLSInsecureSkipVer: true,
	topology.EnvStateStore: true, topology.EnvStateDir: true, topology.EnvOnChangelogLoss: true,
	topology.EnvAPIAuth: true, topology.EnvAPITokenFile: true, topology.EnvAPITokens: true,
	topology.EnvAPIMetrics: true, topology.EnvAPITLSCertFile: true, topology.EnvAPITLSKeyFile: true,
	topology.EnvAPITLSClientCA: true, topology.EnvAPISamples: true, topology.EnvAPIRedact: true,
	topology.EnvAPISampleMaxLen: true,
}

// toolEnvPrefixes are the repository's test and script settings
// (scripts/kafka.sh, registry.sh, connect.sh, elasticsearch.sh, test.sh, the integration
// tests), not the router's. registry.sh's are named in full: a
// SIDESTREAM_REGISTRY_URL is a misspelt SIDESTREAM_SCHEMA_REGISTRY_URL.
var toolEnvPrefixes = []string{"SIDESTREAM_IT_", "SIDESTREAM_KAFKA_", "SIDESTREAM_REGISTRY_PORT", "SIDESTREAM_REGISTRY_DIR", "SIDESTREAM_REGISTRY_HEAP_OPTS", "SIDESTREAM_REGISTRY_START_TIMEOUT", "SIDESTREAM_REGISTRY_STOP_TIMEOUT", "SIDESTREAM_CONNECT_", "SIDESTREAM_MARIADB_", "SIDESTREAM_ELASTICSEARCH_", "SIDESTREAM_SKIP_", "SIDESTREAM_CACHE", "SIDESTREAM_FUZZTIME", "SIDESTREAM_TEST_LOG"}

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

// envBool reads a boolean variable as strconv.ParseBool does (1, t, true,
// TRUE, 0, f, false ...); unset or empty is def.
func envBool(name string, def bool) (bool, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, fmt.Errorf("%s=%q: use true or false (or 1, 0, t, f)", name, v)
	}
	return b, nil
}
