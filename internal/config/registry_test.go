package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const registryConfig = `application_id: orders-router
brokers: [127.0.0.1:9092]
inputs:
  - topic: orders
    format: avro
  - topic: audit
routing:
  default: main
routes:
  - name: main
    topic: orders.main
dirty:
  topic: orders.dirty
`

func TestRegistryProblems(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no url", nil, `registry.yaml:5:13: input "orders" has format avro, which needs a schema registry`},
		{"password without username", map[string]string{EnvRegistryURL: "http://r:8081", EnvRegistryPassword: leak},
			"SIDESTREAM_SCHEMA_REGISTRY_PASSWORD is set without a username"},
		{"username without password", map[string]string{EnvRegistryURL: "http://r:8081", EnvRegistryUsername: "u"},
			"SIDESTREAM_SCHEMA_REGISTRY_USERNAME is set without a password"},
		{"bad url", map[string]string{EnvRegistryURL: "r:8081"}, "SIDESTREAM_SCHEMA_REGISTRY_URL: \"r:8081\" must be an http or https URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Load("registry.yaml", []byte(registryConfig))
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Apply(OverridesFromEnv(func(k string) string { return c.env[k] }))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Apply: %v\nwant it to hold %q", err, c.want)
			}
			if strings.Contains(err.Error(), leak) {
				t.Fatalf("the error holds the password: %v", err)
			}
		})
	}
}

// fetch_timeout and unknown_id_ttl: their defaults when unset, the file's
// values (an explicit 0s TTL kept apart from none), then the environment's
// over the file's.
func TestRegistryTimes(t *testing.T) {
	cfg, err := Load("registry.yaml", []byte(registryConfig))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.SchemaRegistry
	if s.FetchTimeoutOrDefault() != 10*time.Second || s.UnknownIDTTLOrDefault() != 30*time.Second || s.UnknownIDTTL != nil {
		t.Fatalf("unset: fetch %s ttl %s (%v), want 10s and 30s", s.FetchTimeoutOrDefault(), s.UnknownIDTTLOrDefault(), s.UnknownIDTTL)
	}
	var zero SchemaRegistry // a section built in code
	if zero.FetchTimeoutOrDefault() != DefaultRegistryFetchTimeout || zero.UnknownIDTTLOrDefault() != DefaultRegistryUnknownIDTTL {
		t.Fatalf("zero section: fetch %s ttl %s", zero.FetchTimeoutOrDefault(), zero.UnknownIDTTLOrDefault())
	}
	file := registryConfig + "schema_registry:\n  fetch_timeout: 2500ms\n  unknown_id_ttl: 0s\n"
	if cfg, err = Load("registry.yaml", []byte(file)); err != nil {
		t.Fatal(err)
	}
	s = cfg.SchemaRegistry
	if s.FetchTimeoutOrDefault() != 2500*time.Millisecond || s.UnknownIDTTL == nil || s.UnknownIDTTLOrDefault() != 0 {
		t.Fatalf("file: fetch %s ttl %v, want 2.5s and an explicit 0s", s.FetchTimeoutOrDefault(), s.UnknownIDTTL)
	}
	env := map[string]string{EnvRegistryURL: "http://r:8081", EnvRegistryFetchTimeout: " 4s ", EnvRegistryUnknownIDTTL: "1m"}
	if err := cfg.Apply(OverridesFromEnv(func(k string) string { return env[k] })); err != nil {
		t.Fatal(err)
	}
	s = cfg.SchemaRegistry
	if s.FetchTimeoutOrDefault() != 4*time.Second || s.UnknownIDTTLOrDefault() != time.Minute {
		t.Fatalf("environment: fetch %s ttl %s, want 4s and 1m", s.FetchTimeoutOrDefault(), s.UnknownIDTTLOrDefault())
	}
}

// A bad fetch_timeout or unknown_id_ttl in the file is a problem at its
// value's line:col.
func TestRegistryTimesInFile(t *testing.T) {
	for _, c := range []struct{ section, want string }{
		{"  fetch_timeout: 0s\n", `registry.yaml:15:18: schema_registry.fetch_timeout: duration must be positive, got "0s"`},
		{"  fetch_timeout: -1s\n", `registry.yaml:15:18: schema_registry.fetch_timeout: duration must be positive, got "-1s"`},
		{"  fetch_timeout: soon\n", `registry.yaml:15:18: schema_registry.fetch_timeout: invalid duration "soon"`},
		{"  fetch_timeout: 10\n", `registry.yaml:15:18: schema_registry.fetch_timeout: invalid duration "10"`},
		{"  url: http://r:8081\n  unknown_id_ttl: -30s\n", `registry.yaml:16:19: schema_registry.unknown_id_ttl: duration must not be negative, got "-30s"`},
		{"  unknown_id_ttl: [30s]\n", `registry.yaml:15:19: schema_registry.unknown_id_ttl: expected a duration such as "100ms", got a list`},
		{"  fetch_timout: 5s\n", `registry.yaml:15:3: schema_registry: unknown field "fetch_timout" (did you mean "fetch_timeout"?)`},
	} {
		t.Run(c.section, func(t *testing.T) {
			_, err := Load("registry.yaml", []byte(registryConfig+"schema_registry:\n"+c.section))
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load: %v\nwant a *ConfigError holding %q", err, c.want)
			}
		})
	}
}

// A bad SIDESTREAM_SCHEMA_REGISTRY_FETCH_TIMEOUT or _UNKNOWN_ID_TTL names
// its variable and leaves the file's value.
func TestRegistryTimesFromEnvironmentProblems(t *testing.T) {
	for _, c := range []struct {
		name, value, want string
	}{
		{EnvRegistryFetchTimeout, "0s", `SIDESTREAM_SCHEMA_REGISTRY_FETCH_TIMEOUT: "0s" is not a positive duration`},
		{EnvRegistryFetchTimeout, "10", `SIDESTREAM_SCHEMA_REGISTRY_FETCH_TIMEOUT: "10" is not a positive duration`},
		{EnvRegistryUnknownIDTTL, "-1s", `SIDESTREAM_SCHEMA_REGISTRY_UNKNOWN_ID_TTL: "-1s" is not a duration of 0s or more`},
		{EnvRegistryUnknownIDTTL, "a while", `SIDESTREAM_SCHEMA_REGISTRY_UNKNOWN_ID_TTL: "a while" is not a duration of 0s or more`},
	} {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			cfg, err := Load("registry.yaml", []byte(registryConfig))
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{EnvRegistryURL: "http://r:8081", c.name: c.value}
			err = cfg.Apply(OverridesFromEnv(func(k string) string { return env[k] }))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Apply: %v\nwant it to hold %q", err, c.want)
			}
			if s := cfg.SchemaRegistry; s.FetchTimeout != 0 || s.UnknownIDTTL != nil {
				t.Fatalf("a refused value was set: %+v", s)
			}
		})
	}
}

// The TLS files may come from SIDESTREAM_SCHEMA_REGISTRY_TLS_*, relative to
// the working directory, checked as the file's are; a problem names the
// variable.
func TestRegistryTLSFromEnvironment(t *testing.T) {
	load := func(t *testing.T, env map[string]string) (SchemaRegistry, error) {
		t.Helper()
		cfg, err := Load("registry.yaml", []byte(registryConfig))
		if err != nil {
			t.Fatal(err)
		}
		env[EnvRegistryURL] = "https://r:8081"
		err = cfg.Apply(OverridesFromEnv(func(k string) string { return env[k] }))
		return cfg.SchemaRegistry, err
	}
	s, err := load(t, map[string]string{EnvRegistryTLSCAFile: "testdata/tls/ca.pem", EnvRegistryTLSCertFile: "testdata/tls/client.pem", EnvRegistryTLSKeyFile: "testdata/tls/client-key.pem"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (RegistryTLS{CAFile: "testdata/tls/ca.pem", CertFile: "testdata/tls/client.pem", KeyFile: "testdata/tls/client-key.pem"}); s.TLS != want {
		t.Fatalf("tls %+v, want %+v", s.TLS, want)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"missing CA", map[string]string{EnvRegistryTLSCAFile: "testdata/tls/nope.pem"}, "SIDESTREAM_SCHEMA_REGISTRY_TLS_CA_FILE: "},
		{"a key as the CA", map[string]string{EnvRegistryTLSCAFile: "testdata/tls/client-key.pem"}, "SIDESTREAM_SCHEMA_REGISTRY_TLS_CA_FILE: "},
		{"cert without key", map[string]string{EnvRegistryTLSCertFile: "testdata/tls/client.pem"},
			"SIDESTREAM_SCHEMA_REGISTRY_TLS_CERT_FILE is set without schema_registry.tls.key_file (or SIDESTREAM_SCHEMA_REGISTRY_TLS_KEY_FILE)"},
		{"key without cert", map[string]string{EnvRegistryTLSKeyFile: "testdata/tls/client-key.pem"},
			"SIDESTREAM_SCHEMA_REGISTRY_TLS_KEY_FILE is set without schema_registry.tls.cert_file (or SIDESTREAM_SCHEMA_REGISTRY_TLS_CERT_FILE)"},
		{"not a pair", map[string]string{EnvRegistryTLSCertFile: "testdata/tls/client.pem", EnvRegistryTLSKeyFile: "testdata/tls/other-key.pem"},
			"SIDESTREAM_SCHEMA_REGISTRY_TLS_CERT_FILE and SIDESTREAM_SCHEMA_REGISTRY_TLS_KEY_FILE do not make a key pair"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := load(t, c.env); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Apply: %v\nwant it to hold %q", err, c.want)
			}
		})
	}
}
