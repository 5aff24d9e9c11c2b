package main

import (
	"log/slog"
	"sort"
	"strings"

	"github.com/sidestream/sidestream/internal/config"
)

// knownEnv are the SIDESTREAM_* variables the router reads.
var knownEnv = map[string]bool{
	"SIDESTREAM_CONFIG": true, "SIDESTREAM_BROKERS": true, "SIDESTREAM_APPLICATION_ID": true,
	"SIDESTREAM_GUARANTEE": true, "SIDESTREAM_COMMIT_INTERVAL": true, "SIDESTREAM_LISTEN": true,
	"SIDESTREAM_INSTANCE_ID": true, "SIDESTREAM_OWNER_URL_TEMPLATE": true, "SIDESTREAM_STATIC_MEMBERSHIP": true,
	"SIDESTREAM_LOG_LEVEL": true, "SIDESTREAM_LOG_FORMAT": true, "SIDESTREAM_AUDIT_MYSQL_DSN": true,
	config.EnvSecurityProtocol: true, config.EnvSASLMechanism: true, config.EnvSASLUsername: true,
	config.EnvRegistryURL: true, config.EnvRegistryUsername: true, config.EnvRegistryPassword: true,
	config.EnvRegistryFetchTimeout: true, config.EnvRegistryUnknownIDTTL: true, config.EnvRegistryTLSCAFile: true,
	config.EnvRegistryTLSCertFile: true, config.EnvRegistryTLSKeyFile: true,
	config.EnvSASLPassword: true, config.EnvSASLOAuthTokenURL: true, config.EnvSASLOAuthClientID: true,
	config.EnvSASLOAuthClientSecret: true, config.EnvSASLOAuthScopes: true, config.EnvTLSCAFile: true, config.EnvTLSCertFile: true,
	config.EnvTLSKeyFile: true, config.EnvTLSServerName: true, config.EnvTLSInsecureSkipVer: true,
	config.EnvStateStore: true, config.EnvStateDir: true, config.EnvOnChangelogLoss: true,
	config.EnvAPIAuth: true, config.EnvAPITokenFile: true, config.EnvAPITokens: true,
	config.EnvAPIMetrics: true, config.EnvAPITLSCertFile: true, config.EnvAPITLSKeyFile: true,
	config.EnvAPITLSClientCA: true, config.EnvAPISamples: true, config.EnvAPIRedact: true,
	config.EnvAPISampleMaxLen: true,
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
