package topology

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"path/filepath"
)

// Input formats. json is the default; the others are framed in the
// Confluent wire format and decoded with their writer schema from the
// schema_registry section's registry.
const (
	InputJSON       = "json"
	InputAvro       = "avro"
	InputProtobuf   = "protobuf"
	InputJSONSchema = "json_schema"
)

// RegistryFormat reports whether an input format is decoded through the
// schema registry.
func RegistryFormat(f string) bool {
	return f == InputAvro || f == InputProtobuf || f == InputJSONSchema
}

// SchemaRegistry is the Confluent-compatible schema registry of the
// registry-backed inputs (format avro, protobuf, json_schema). Each field
// but the TLS files can also come from the environment
// (SIDESTREAM_SCHEMA_REGISTRY_URL, _USERNAME, _PASSWORD); the password
// comes only from there.
type SchemaRegistry struct {
	// URL is the registry's base URL (http or https), e.g.
	// https://registry:8081 or Apicurio's .../apis/ccompat/v7.
	URL string `yaml:"url"`
	// Username and Password are HTTP basic auth; the password only from
	// SIDESTREAM_SCHEMA_REGISTRY_PASSWORD. It never prints.
	Username string `yaml:"username"`
	Password Secret `yaml:"password"`
	// TLS of an https URL: the CA that signs the registry's certificate
	// (default: the system's roots), a client certificate and its key
	// (both or neither). Relative paths are relative to the file.
	TLS RegistryTLS `yaml:"tls"`
}

// RegistryTLS is the schema registry's TLS.
type RegistryTLS struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// ClientTLS is the registry's TLS as the brokers' TLS model (what
// kclient.TLSConfig builds from).
func (t RegistryTLS) ClientTLS() TLS {
	return TLS{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}
}

// The environment variables of the schema_registry section.
const (
	EnvRegistryURL      = "SIDESTREAM_SCHEMA_REGISTRY_URL"
	EnvRegistryUsername = "SIDESTREAM_SCHEMA_REGISTRY_USERNAME"
	EnvRegistryPassword = "SIDESTREAM_SCHEMA_REGISTRY_PASSWORD"
)

var registryEnv = map[string]string{
	"schema_registry.url":      EnvRegistryURL,
	"schema_registry.username": EnvRegistryUsername,
	"schema_registry.password": EnvRegistryPassword,
}

// RegistryOverrides are the schema_registry settings from the
// environment; empty fields leave the file's value.
type RegistryOverrides struct {
	URL      string
	Username string
	Password Secret
}

func (o RegistryOverrides) merge(p RegistryOverrides) RegistryOverrides {
	if p.URL != "" {
		o.URL = p.URL
	}
	if p.Username != "" {
		o.Username = p.Username
	}
	if p.Password != "" {
		o.Password = p.Password
	}
	return o
}

// RegistryOverridesFromEnv reads SIDESTREAM_SCHEMA_REGISTRY_URL,
// _USERNAME and _PASSWORD (OverridesFromEnv includes them).
func RegistryOverridesFromEnv(getenv func(string) string) RegistryOverrides {
	return RegistryOverrides{URL: getenv(EnvRegistryURL), Username: getenv(EnvRegistryUsername), Password: Secret(getenv(EnvRegistryPassword))}
}

// validateFormat checks an input's format and that a JSON Schema file
// goes only with json (a registry format's schema is the writer's).
func (d *doc) validateInputFormat(p string, in Input) {
	switch {
	case in.Format == InputJSON:
	case RegistryFormat(in.Format):
		if in.Schema != "" {
			d.at(p+".schema", "%s.schema (a JSON Schema file) goes only with format json; an input of format %s is decoded with its writer schema from the schema registry", p, in.Format)
		}
	default:
		d.at(p+".format", "input format %q is not supported (supported: json, avro, protobuf, json_schema)", in.Format)
	}
}

// validateRegistry checks the schema_registry section on its own; that a
// registry format has a URL waits for Apply (it may come from
// SIDESTREAM_SCHEMA_REGISTRY_URL).
func (d *doc) validateRegistry() {
	s := &d.cfg.SchemaRegistry
	if s.Password != "" {
		d.at("schema_registry.password", "schema_registry.password may not be in the file: set %s (a Kubernetes Secret)", EnvRegistryPassword)
		s.Password = ""
	}
	if s.URL != "" {
		if err := checkRegistryURL(s.URL); err != nil {
			d.at("schema_registry.url", "schema_registry.url: %v", err)
		}
	}
	files := []tlsFile{
		{"schema_registry.tls.ca_file", "", pemCA, &s.TLS.CAFile},
		{"schema_registry.tls.cert_file", "", pemCert, &s.TLS.CertFile},
		{"schema_registry.tls.key_file", "", pemKey, &s.TLS.KeyFile},
	}
	for _, f := range files {
		if *f.value == "" {
			continue
		}
		if !filepath.IsAbs(*f.value) {
			*f.value = filepath.Join(d.dir, *f.value)
		}
		if err := checkPEMFile(f.kind, *f.value); err != nil {
			d.at(f.path, "%s: %v", f.path, err)
		}
	}
}

// checkRegistryURL: an absolute http or https URL with a host and no
// credentials (they belong in username and the password variable).
func checkRegistryURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %v", s, cause(err))
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q must be an http or https URL (e.g. https://registry:8081)", s)
	case u.Host == "":
		return fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return fmt.Errorf("the URL may not hold credentials: set schema_registry.username and %s", EnvRegistryPassword)
	}
	return nil
}

// ApplyRegistry is the schema_registry part of Apply alone, for `router
// validate` (which checks what `router run` would, without the brokers).
func (c *Config) ApplyRegistry(o RegistryOverrides) error { return c.applyRegistry(o) }

// applyRegistry sets the schema_registry overrides, then checks what
// needs the file and the environment together: every registry format
// input has a URL to read its schemas from, a username has its password,
// a client certificate its key. A problem with a value from the file
// points at FILE:LINE:COL.
func (c *Config) applyRegistry(o RegistryOverrides) error {
	k := newOverrideCheck(c, "schema_registry", registryEnv)
	s := &c.SchemaRegistry
	if o.URL != "" {
		s.URL, k.fromEnv["schema_registry.url"] = o.URL, true
		if err := checkRegistryURL(o.URL); err != nil {
			k.problem("%s: %v", EnvRegistryURL, err)
		}
	}
	if o.Username != "" {
		s.Username, k.fromEnv["schema_registry.username"] = o.Username, true
	}
	if o.Password != "" {
		s.Password, k.fromEnv["schema_registry.password"] = o.Password, true
	}
	if s.URL == "" {
		in := newOverrideCheck(c, "inputs", nil)
		for i, inp := range c.Inputs {
			if RegistryFormat(inp.Format) {
				in.report(fmt.Sprintf("inputs[%d].format", i), "input %q has format %s, which needs a schema registry: set schema_registry.url (or %s)", inp.Topic, inp.Format, EnvRegistryURL)
			}
		}
		k.probs = append(k.probs, in.probs...)
		k.probs = append(k.probs, c.avroNeedsRegistry()...)
	}
	switch {
	case s.Username != "" && s.Password == "":
		k.report("schema_registry.username", "%s is set without a password: set %s", k.name("schema_registry.username"), EnvRegistryPassword)
	case s.Username == "" && s.Password != "":
		k.problem("%s is set without a username: set schema_registry.username (or %s)", EnvRegistryPassword, EnvRegistryUsername)
	}
	switch t := s.TLS; {
	case t.CertFile != "" && t.KeyFile == "":
		k.report("schema_registry.tls.cert_file", "schema_registry.tls.cert_file is set without schema_registry.tls.key_file: a client certificate needs its private key")
	case t.KeyFile != "" && t.CertFile == "":
		k.report("schema_registry.tls.key_file", "schema_registry.tls.key_file is set without schema_registry.tls.cert_file: a private key needs its client certificate")
	case t.CertFile != "" && t.KeyFile != "":
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			k.report("schema_registry.tls.key_file", "schema_registry.tls.cert_file and key_file do not make a key pair: %v", err)
		}
	}
	return k.err()
}
