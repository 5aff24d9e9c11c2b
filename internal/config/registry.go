package config

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"
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
// can also come from the environment (SIDESTREAM_SCHEMA_REGISTRY_URL,
// _USERNAME, _PASSWORD, _FETCH_TIMEOUT, _UNKNOWN_ID_TTL, _TLS_CA_FILE,
// _TLS_CERT_FILE, _TLS_KEY_FILE); the password comes only from there.
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
	// FetchTimeout bounds one fetch of a schema and its references; past
	// it the lookup is the registry's outage (the batch is aborted and
	// retried), not the record's fault. FetchTimeoutOrDefault applies
	// the default.
	FetchTimeout Duration `yaml:"fetch_timeout"`
	// UnknownIDTTL is how long a schema id the registry answered 404 for
	// is remembered as unknown before it is asked again, so a stream of
	// records with a bogus id costs one request per TTL
	// (UnknownIDTTLOrDefault applies the default); 0s asks every time. A
	// pointer: an explicit 0s differs from none.
	UnknownIDTTL *Span `yaml:"unknown_id_ttl"`
}

// The defaults of schema_registry.fetch_timeout and unknown_id_ttl (the
// registry package's own).
const (
	DefaultRegistryFetchTimeout = 10 * time.Second
	DefaultRegistryUnknownIDTTL = 30 * time.Second
)

// FetchTimeoutOrDefault is fetch_timeout, or its default when unset.
func (s SchemaRegistry) FetchTimeoutOrDefault() time.Duration {
	if s.FetchTimeout <= 0 {
		return DefaultRegistryFetchTimeout
	}
	return s.FetchTimeout.D()
}

// UnknownIDTTLOrDefault is unknown_id_ttl (0 included), or its default
// when unset.
func (s SchemaRegistry) UnknownIDTTLOrDefault() time.Duration {
	if s.UnknownIDTTL == nil {
		return DefaultRegistryUnknownIDTTL
	}
	return s.UnknownIDTTL.D()
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
	EnvRegistryURL          = "SIDESTREAM_SCHEMA_REGISTRY_URL"
	EnvRegistryUsername     = "SIDESTREAM_SCHEMA_REGISTRY_USERNAME"
	EnvRegistryPassword     = "SIDESTREAM_SCHEMA_REGISTRY_PASSWORD"
	EnvRegistryFetchTimeout = "SIDESTREAM_SCHEMA_REGISTRY_FETCH_TIMEOUT"
	EnvRegistryUnknownIDTTL = "SIDESTREAM_SCHEMA_REGISTRY_UNKNOWN_ID_TTL"
	// The TLS files (the Helm chart mounts them from
	// schemaRegistry.tls.existingSecret), relative to the working
	// directory.
	EnvRegistryTLSCAFile   = "SIDESTREAM_SCHEMA_REGISTRY_TLS_CA_FILE"
	EnvRegistryTLSCertFile = "SIDESTREAM_SCHEMA_REGISTRY_TLS_CERT_FILE"
	EnvRegistryTLSKeyFile  = "SIDESTREAM_SCHEMA_REGISTRY_TLS_KEY_FILE"
)

// RegistryOverrides are the schema_registry settings from the
// environment; empty fields leave the file's value.
type RegistryOverrides struct {
	URL      string
	Username string
	Password Secret
	// FetchTimeout and UnknownIDTTL are Go durations ("10s"), checked
	// by Apply: a positive fetch timeout, a TTL of 0s or more.
	FetchTimeout string
	UnknownIDTTL string
	// The TLS files, relative to the working directory.
	CAFile, CertFile, KeyFile string
}

func (o RegistryOverrides) merge(p RegistryOverrides) RegistryOverrides {
	for _, f := range []struct{ dst, src *string }{
		{&o.URL, &p.URL}, {&o.Username, &p.Username}, {&o.FetchTimeout, &p.FetchTimeout}, {&o.UnknownIDTTL, &p.UnknownIDTTL},
		{&o.CAFile, &p.CAFile}, {&o.CertFile, &p.CertFile}, {&o.KeyFile, &p.KeyFile},
	} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	if p.Password != "" {
		o.Password = p.Password
	}
	return o
}

// RegistryOverridesFromEnv reads the SIDESTREAM_SCHEMA_REGISTRY_*
// variables above (OverridesFromEnv includes them).
func RegistryOverridesFromEnv(getenv func(string) string) RegistryOverrides {
	return RegistryOverrides{
		URL: getenv(EnvRegistryURL), Username: getenv(EnvRegistryUsername), Password: Secret(getenv(EnvRegistryPassword)),
		FetchTimeout: strings.TrimSpace(getenv(EnvRegistryFetchTimeout)), UnknownIDTTL: strings.TrimSpace(getenv(EnvRegistryUnknownIDTTL)),
		CAFile: getenv(EnvRegistryTLSCAFile), CertFile: getenv(EnvRegistryTLSCertFile), KeyFile: getenv(EnvRegistryTLSKeyFile),
	}
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
	for _, f := range s.TLS.files() {
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

// files are the TLS section's file fields, with their variables.
func (t *RegistryTLS) files() []tlsFile {
	return []tlsFile{
		{"schema_registry.tls.ca_file", EnvRegistryTLSCAFile, pemCA, &t.CAFile},
		{"schema_registry.tls.cert_file", EnvRegistryTLSCertFile, pemCert, &t.CertFile},
		{"schema_registry.tls.key_file", EnvRegistryTLSKeyFile, pemKey, &t.KeyFile},
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
// points at FILE:LINE:COL; one with a value from a variable names it.
func (c *Config) applyRegistry(o RegistryOverrides) error {
	k := newOverrideCheck(c, "schema_registry", sectionEnv("schema_registry"))
	k.registryOverrides(o)
	s := &c.SchemaRegistry
	if s.URL == "" {
		in := newOverrideCheck(c, "inputs", nil)
		for i, inp := range c.Inputs {
			if RegistryFormat(inp.Format) {
				in.report(fmt.Sprintf("inputs[%d].format", i), "input %q has format %s, which needs a schema registry: set schema_registry.url (or %s)", inp.Topic, inp.Format, EnvRegistryURL)
			}
		}
		k.probs = append(k.probs, in.probs...)
		k.probs = append(k.probs, c.tablesNeedRegistry()...)
		k.probs = append(k.probs, c.avroNeedsRegistry()...)
	}
	switch {
	case s.Username != "" && s.Password == "":
		k.report("schema_registry.username", "%s is set without a password: set %s", k.name("schema_registry.username"), EnvRegistryPassword)
	case s.Username == "" && s.Password != "":
		k.problem("%s is set without a username: set schema_registry.username (or %s)", EnvRegistryPassword, EnvRegistryUsername)
	}
	k.registryTLSPair()
	return k.err()
}

// registryOverrides applies and checks each SIDESTREAM_SCHEMA_REGISTRY_*
// variable on its own.
func (k *overrideCheck) registryOverrides(o RegistryOverrides) {
	s := &k.c.SchemaRegistry
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
	if o.FetchTimeout != "" {
		d, err := time.ParseDuration(o.FetchTimeout)
		if err != nil || d <= 0 {
			k.problem("%s: %q is not a positive duration (e.g. \"10s\")", EnvRegistryFetchTimeout, o.FetchTimeout)
		} else {
			s.FetchTimeout, k.fromEnv["schema_registry.fetch_timeout"] = Duration(d), true
		}
	}
	if o.UnknownIDTTL != "" {
		d, err := time.ParseDuration(o.UnknownIDTTL)
		if err != nil || d < 0 {
			k.problem("%s: %q is not a duration of 0s or more (e.g. \"30s\"; 0s asks the registry every time)", EnvRegistryUnknownIDTTL, o.UnknownIDTTL)
		} else {
			ttl := Span(d)
			s.UnknownIDTTL, k.fromEnv["schema_registry.unknown_id_ttl"] = &ttl, true
		}
	}
	files := map[string]string{"schema_registry.tls.ca_file": o.CAFile, "schema_registry.tls.cert_file": o.CertFile, "schema_registry.tls.key_file": o.KeyFile}
	for _, f := range s.TLS.files() {
		v := files[f.path]
		if v == "" {
			continue
		}
		*f.value, k.fromEnv[f.path] = v, true
		if err := checkPEMFile(f.kind, v); err != nil {
			k.problem("%s: %v", f.env, err)
		}
	}
}

// registryTLSPair: a client certificate needs its key, and the two must
// make a pair.
func (k *overrideCheck) registryTLSPair() {
	const cert, key = "schema_registry.tls.cert_file", "schema_registry.tls.key_file"
	switch t := k.c.SchemaRegistry.TLS; {
	case t.CertFile != "" && t.KeyFile == "":
		k.report(cert, "%s is set without %s: a client certificate needs its private key", k.name(cert), k.either(key))
	case t.KeyFile != "" && t.CertFile == "":
		k.report(key, "%s is set without %s: a private key needs its client certificate", k.name(key), k.either(cert))
	case t.CertFile != "" && t.KeyFile != "":
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			k.report(key, "%s and %s do not make a key pair: %v", k.name(cert), k.name(key), err)
		}
	}
}
