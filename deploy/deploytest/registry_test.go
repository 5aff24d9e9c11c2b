package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/config"
)

// registryTopology is a registry-backed topology, the kind the
// schemaRegistry values are for; its URL comes from the chart.
const registryTopology = `application_id: orders-router
inputs:
  - topic: orders
    format: avro
routing:
  default: main
routes:
  - name: main
    topic: orders.main
dirty:
  topic: orders.dirty
`

// TestSchemaRegistry: schemaRegistry.url sets SIDESTREAM_SCHEMA_REGISTRY_URL,
// existingSecret the username and password through secretKeyRef, and
// tls.existingSecret is mounted read-only at /etc/sidestream/registry-tls
// with the files the SIDESTREAM_SCHEMA_REGISTRY_TLS_* variables name. The
// router, given that environment and the Secrets' files where the pod
// has them, reads the registry section the values describe.
func TestSchemaRegistry(t *testing.T) {
	requireHelm(t)
	r := render(t, valueSetArgs(t, "registry")...)
	wantEnv := map[string]string{
		config.EnvRegistryURL:         "https://registry.example.internal:8081",
		config.EnvRegistryTLSCAFile:   "/etc/sidestream/registry-tls/ca.crt",
		config.EnvRegistryTLSCertFile: "/etc/sidestream/registry-tls/tls.crt",
		config.EnvRegistryTLSKeyFile:  "/etc/sidestream/registry-tls/tls.key",
	}
	for name, want := range wantEnv {
		if v, _, _, ok := r.env(name); !ok || v != want {
			t.Errorf("%s %q (set %v), want %q", name, v, ok, want)
		}
	}
	for name, want := range map[string]string{
		config.EnvRegistryUsername: "registry-credentials/user",
		config.EnvRegistryPassword: "registry-credentials/pass",
	} {
		if v, _, sec, _ := r.env(name); sec != want || v != "" {
			t.Errorf("%s from secret %q (value %q), want secretKeyRef %s", name, sec, v, want)
		}
	}
	var mounts int
	for _, m := range r.c.VolumeMounts {
		if m.Name == "registry-tls" {
			mounts++
			if m.MountPath != "/etc/sidestream/registry-tls" || !m.ReadOnly {
				t.Errorf("registry-tls mounted at %q (readOnly %v), want /etc/sidestream/registry-tls read-only", m.MountPath, m.ReadOnly)
			}
		}
	}
	if mounts != 1 {
		t.Errorf("registry-tls mounted %d times, want once", mounts)
	}
	files := registryTLSFiles(t, r)
	if want := []string{"ca.crt", "tls.crt", "tls.key"}; !slices.Equal(files, want) {
		t.Errorf("registry TLS files %v, want %v", files, want)
	}
	checkSecurity(t, r)
	checkConfigMount(t, r)
	checkRouterReadsRegistry(t, r)

	// The CA alone: no client certificate files or variables; no Secret,
	// no credentials.
	r = render(t, "--set", "schemaRegistry.tls.existingSecret=registry-ca")
	for _, name := range []string{config.EnvRegistryURL, config.EnvRegistryUsername, config.EnvRegistryPassword, config.EnvRegistryTLSCertFile, config.EnvRegistryTLSKeyFile} {
		if _, _, _, ok := r.env(name); ok {
			t.Errorf("%s set without url/existingSecret/clientCert", name)
		}
	}
	if v, _, _, _ := r.env(config.EnvRegistryTLSCAFile); v != "/etc/sidestream/registry-tls/ca.crt" {
		t.Errorf("%s %q", config.EnvRegistryTLSCAFile, v)
	}
	if files := registryTLSFiles(t, r); !slices.Equal(files, []string{"ca.crt"}) {
		t.Errorf("CA-only registry TLS files %v, want [ca.crt]", files)
	}

	// Off by default: nothing of it rendered.
	r = render(t)
	for _, e := range r.c.Env {
		if strings.HasPrefix(e.Name, "SIDESTREAM_SCHEMA_REGISTRY_") {
			t.Errorf("default render sets %s", e.Name)
		}
	}
	if files := registryTLSFiles(t, r); files != nil {
		t.Errorf("default render mounts registry TLS files %v", files)
	}
}

// registryTLSFiles are the items of the registry-tls Secret volume (nil
// without one), each mounted under its own key's name, not readable by
// others.
func registryTLSFiles(t *testing.T, r rendered) []string {
	t.Helper()
	var files []string
	for _, v := range r.pod.Volumes {
		if v.Name != "registry-tls" {
			continue
		}
		if v.Secret == nil || v.Secret.SecretName == "" {
			t.Fatalf("registry-tls volume %+v, want a Secret", v.Secret)
		}
		if m := v.Secret.DefaultMode; m == nil || *m&0o007 != 0 {
			t.Errorf("registry TLS files readable by others (defaultMode %v)", m)
		}
		for _, it := range v.Secret.Items {
			if it.Key != it.Path {
				t.Errorf("secret key %s mounted as %s", it.Key, it.Path)
			}
			files = append(files, it.Path)
		}
	}
	return files
}

// checkRouterReadsRegistry lays out the registry TLS Secret where the pod
// mounts it (a directory standing for /etc/sidestream, PEM files of the
// topology tests for the Secret's keys), fills the secretKeyRef variables,
// and applies the container's environment to a registry-backed topology
// as router run does.
func checkRouterReadsRegistry(t *testing.T, r rendered) {
	t.Helper()
	etc := t.TempDir()
	pem := map[string]string{"ca.crt": "ca.pem", "tls.crt": "client.pem", "tls.key": "client-key.pem"}
	for _, f := range registryTLSFiles(t, r) {
		b, err := os.ReadFile(filepath.Join(root, "internal", "config", "testdata", "tls", pem[f]))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(etc, "registry-tls", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	secrets := map[string]string{"registry-credentials/user": "router", "registry-credentials/pass": "s3cret"}
	env := map[string]string{}
	for _, e := range r.c.Env {
		v, _, sec, _ := r.env(e.Name)
		if sec != "" {
			v = secrets[sec]
		}
		if rest, ok := strings.CutPrefix(v, "/etc/sidestream/"); ok {
			v = filepath.Join(etc, rest)
		}
		env[e.Name] = v
	}
	cfg, err := config.Load("topology.yaml", []byte(registryTopology))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(config.OverridesFromEnv(func(k string) string { return env[k] })); err != nil {
		t.Fatalf("the container's environment: %v", err)
	}
	s := cfg.SchemaRegistry
	wantTLS := config.RegistryTLS{CAFile: filepath.Join(etc, "registry-tls", "ca.crt"),
		CertFile: filepath.Join(etc, "registry-tls", "tls.crt"), KeyFile: filepath.Join(etc, "registry-tls", "tls.key")}
	if s.URL != "https://registry.example.internal:8081" || s.Username != "router" || s.Password.Reveal() != "s3cret" || s.TLS != wantTLS {
		t.Errorf("the router's schema_registry %+v (password %v), want the chart's URL, the Secret's credentials and TLS files %+v", s, s.Password.Reveal() == "s3cret", wantTLS)
	}
}
