package config

import (
	"path/filepath"
	"strings"
	"testing"
)

const apiToken = "0123456789abcdef0123456789abcdef"

// TestBadAPIConfigs checks the api problems found once the environment
// is known: each testdata/bad-api/*.bad.yaml loads, its "# env:" line is
// applied, and ApplyAPI's whole error text is compared with its .golden.
func TestBadAPIConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad-api/*.bad.yaml")
	if err != nil || len(files) < 6 {
		t.Fatalf("found %d bad api configs (%v), want at least 6", len(files), err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".bad.yaml"), func(t *testing.T) {
			cfg, err := LoadFile(f)
			if err != nil {
				t.Fatalf("LoadFile: %v (the file alone must load)", err)
			}
			err = cfg.ApplyAPI(APIOverridesFromEnv(envOf(t, f)))
			if err == nil {
				t.Fatalf("ApplyAPI accepted %s", f)
			}
			if strings.Contains(err.Error(), apiToken) {
				t.Errorf("the error holds a token:\n%v", err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".bad.yaml")+".golden", []byte(err.Error()))
		})
	}
}

func TestAPIGood(t *testing.T) {
	base := "application_id: a\nbrokers: [b:9092]\ninputs: [{topic: in}]\nroutes: [{name: main, topic: out}]\nrouting: {default: main}\ndirty: {topic: d}\n"
	cases := []struct {
		name, api string
		env       map[string]string
		check     func(t *testing.T, a API)
	}{
		{"defaults", "", nil, func(t *testing.T, a API) {
			if a.Auth != APIAuthNone || a.Metrics != APIMetricsOpen || a.Samples != SamplesFull || a.SampleMaxBytes != DefaultSampleMaxBytes || a.TLS.Enabled() {
				t.Errorf("defaults: %+v", a)
			}
		}},
		{"bearer file", "api:\n  auth: Bearer\n  token_file: testdata/api/tokens\n  metrics: protected\n  samples: redacted\n  redact: [customer.email, 'items.*.card']\n  sample_max_bytes: 200\n", nil, func(t *testing.T, a API) {
			if a.Auth != APIAuthBearer || !strings.HasSuffix(a.TokenFile, "testdata/api/tokens") || !a.ProtectMetrics() || a.SampleMaxBytes != 200 || len(a.Redact) != 2 {
				t.Errorf("bearer: %+v", a)
			}
		}},
		{"bearer env", "", map[string]string{EnvAPIAuth: "bearer", EnvAPITokens: apiToken + ", " + strings.ToUpper(apiToken), EnvAPISamples: "redacted", EnvAPIRedact: "a.b,c"}, func(t *testing.T, a API) {
			if a.Auth != APIAuthBearer || len(SplitTokens(a.Tokens.Reveal())) != 2 || a.Samples != SamplesRedacted || len(a.Redact) != 2 {
				t.Errorf("bearer env: %+v", a)
			}
		}},
		{"mtls", "api:\n  auth: mtls\n  tls:\n    cert_file: testdata/tls/client.pem\n    key_file: testdata/tls/client-key.pem\n    client_ca_file: testdata/tls/ca.pem\n", nil, func(t *testing.T, a API) {
			if a.Auth != APIAuthMTLS || !a.TLS.Enabled() || a.TLS.ClientCAFile == "" {
				t.Errorf("mtls: %+v", a)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Load("x.yaml", []byte(base+c.api))
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.ApplyAPI(APIOverridesFromEnv(func(k string) string { return c.env[k] })); err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg.API)
		})
	}
}
