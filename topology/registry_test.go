package topology

import (
	"strings"
	"testing"
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

// The URL, the username and the password may come from the environment
// alone; the password never prints.
func TestRegistryFromEnvironment(t *testing.T) {
	cfg, err := Load("registry.yaml", []byte(registryConfig))
	if err != nil {
		t.Fatalf("a registry format loads before its URL is known: %v", err)
	}
	env := map[string]string{EnvRegistryURL: "https://registry:8081", EnvRegistryUsername: "router", EnvRegistryPassword: leak}
	if err := cfg.Apply(OverridesFromEnv(func(k string) string { return env[k] })); err != nil {
		t.Fatal(err)
	}
	s := cfg.SchemaRegistry
	if s.URL != "https://registry:8081" || s.Username != "router" || s.Password.Reveal() != leak {
		t.Fatalf("schema_registry %+v", s)
	}
	if strings.Contains(s.Password.String(), leak) {
		t.Fatal("the password prints")
	}
	top, err := Compile(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	if !RegistryFormat(top.Inputs[0].Format) || RegistryFormat(top.Inputs[1].Format) {
		t.Fatalf("formats %q %q: want avro, then the default json", top.Inputs[0].Format, top.Inputs[1].Format)
	}
}

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
