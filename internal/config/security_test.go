package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// leak is the password of the security test configs: no output may hold
// it.
const leak = "hunter2-must-not-print"

// TestBadSecurityConfigs checks the security problems found only once the
// environment overrides are known (where the password and often the rest
// come from): each testdata/bad-security/*.bad.yaml is loaded, its
// "# env: K=V ..." first line is applied as the environment, and the
// whole error text of Apply is compared with its .golden file (go test
// ./topology -update rewrites them).
func TestBadSecurityConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad-security/*.bad.yaml")
	if err != nil || len(files) < 8 {
		t.Fatalf("found %d bad security configs (%v), want at least 8", len(files), err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".bad.yaml"), func(t *testing.T) {
			cfg, err := LoadFile(f)
			if err != nil {
				t.Fatalf("LoadFile: %v (the file alone must load: these problems need the environment)", err)
			}
			err = cfg.Apply(OverridesFromEnv(envOf(t, f)))
			if err == nil {
				t.Fatalf("Apply accepted %s", f)
			}
			if strings.Contains(err.Error(), leak) {
				t.Errorf("the error holds the password:\n%v", err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".bad.yaml")+".golden", []byte(err.Error()))
		})
	}
}

// envOf reads a config's "# env: K=V K=V" first line.
func envOf(t *testing.T, f string) func(string) string {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	first, _, _ := strings.Cut(string(b), "\n")
	if rest, ok := strings.CutPrefix(first, "# env: "); ok {
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	return func(k string) string { return env[k] }
}

func TestBadConfigsNeverPrintThePassword(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/security-*.golden")
	if len(files) < 5 {
		t.Fatalf("found %d security goldens", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(leak)) {
			t.Errorf("%s holds the password", f)
		}
	}
}

// TestSecurityGood: names are normalised, relative TLS paths resolved
// against the file, the environment wins and fills in.
func TestSecurityGood(t *testing.T) {
	cfg, err := LoadFile("testdata/good/security.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Security
	if s.Protocol != ProtocolSASLSSL || s.SASL.Mechanism != SASLScramSHA512 || !s.UsesTLS() || !s.UsesSASL() {
		t.Errorf("security = %+v, want sasl_ssl with SCRAM-SHA-512", s)
	}
	if want := filepath.Join("testdata", "tls", "ca.pem"); s.TLS.CAFile != want {
		t.Errorf("ca_file resolved to %q, want %q", s.TLS.CAFile, want)
	}
	if err := cfg.Apply(Overrides{}); err == nil || !strings.Contains(err.Error(), "a SASL password is required; set SIDESTREAM_SASL_PASSWORD") {
		t.Errorf("Apply without a password: %v", err)
	}
	env := map[string]string{
		EnvSASLPassword:       leak,
		EnvSASLUsername:       "other",
		EnvTLSServerName:      "kafka.internal",
		EnvTLSInsecureSkipVer: "false",
		EnvTLSCAFile:          "testdata/tls/ca.pem",
	}
	if err := cfg.Apply(OverridesFromEnv(func(k string) string { return env[k] })); err != nil {
		t.Fatal(err)
	}
	s = cfg.Security
	if s.SASL.Password.Reveal() != leak || s.SASL.Username != "other" || s.TLS.ServerName != "kafka.internal" || s.TLS.CAFile != "testdata/tls/ca.pem" {
		t.Errorf("after the environment: %+v", s)
	}
	// Plaintext needs nothing; the default is plaintext.
	if c := mustLoad(t, minimalYAML+"brokers: [a:1]\n"); c.Security.Protocol != ProtocolPlaintext || c.Apply(Overrides{}) != nil {
		t.Errorf("default security = %+v", c.Security)
	}
}

// TestSecurityOverridesMerge: the flags' overrides (none today) win over
// the environment's field by field.
func TestSecurityOverridesMerge(t *testing.T) {
	env := Overrides{Security: SecurityOverrides{Protocol: "ssl", Username: "a", Password: "p"}}
	got := env.Merge(Overrides{Security: SecurityOverrides{Username: "b", CAFile: "ca.pem"}})
	want := SecurityOverrides{Protocol: "ssl", Username: "b", Password: "p", CAFile: "ca.pem"}
	if got.Security != want {
		t.Errorf("Merge = %+v, want %+v", got.Security, want)
	}
}

// TestSecurityOAuthGood: OAUTHBEARER from the file, the secret (and
// here the scopes) from the environment; AWS_MSK_IAM over sasl_ssl needs
// nothing more from the topology.
func TestSecurityOAuthGood(t *testing.T) {
	c := mustLoad(t, minimalYAML+"brokers: [a:1]\nsecurity:\n  protocol: sasl_ssl\n  sasl:\n    mechanism: oauthbearer\n    oauth:\n      token_url: https://idp.example.com/token\n      client_id: router\n      extensions: {logicalCluster: lkc-1}\n")
	env := map[string]string{EnvSASLOAuthClientSecret: leak, EnvSASLOAuthScopes: "kafka.read, kafka.write"}
	if err := c.Apply(OverridesFromEnv(func(k string) string { return env[k] })); err != nil {
		t.Fatal(err)
	}
	o := c.Security.SASL.OAuth
	if c.Security.SASL.Mechanism != SASLOAuthBearer || o.ClientSecret.Reveal() != leak || strings.Join(o.Scopes, " ") != "kafka.read kafka.write" || o.Extensions["logicalCluster"] != "lkc-1" {
		t.Errorf("security = %+v", c.Security)
	}
	if s := fmt.Sprintf("%v %+v", c.Security, c.Security); strings.Contains(s, leak) {
		t.Errorf("the client secret prints: %s", s)
	}
	m := mustLoad(t, minimalYAML+"brokers: [b-1.x.kafka.eu-west-1.amazonaws.com:9098]\nsecurity:\n  protocol: sasl_ssl\n  sasl:\n    mechanism: AWS_MSK_IAM\n")
	if err := m.Apply(Overrides{}); err != nil || m.Security.SASL.Mechanism != SASLAWSMSKIAM {
		t.Errorf("AWS_MSK_IAM over sasl_ssl: %v", err)
	}
}
