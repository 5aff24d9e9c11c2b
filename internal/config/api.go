package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// API secures the router's HTTP API: who may call it, whether it speaks
// TLS, and how much of the records the web view (/ui) and the state
// queries (/state) show. Secrets never stand here: bearer tokens come
// from token_file or SIDESTREAM_API_TOKENS. Every field has an
// environment override (SIDESTREAM_API_*), applied by ApplyAPI.
type API struct {
	// Auth is none (the default: anyone who reaches the port), bearer
	// (Authorization: Bearer <token>, tokens from TokenFile or
	// SIDESTREAM_API_TOKENS) or mtls (a client certificate signed by
	// TLS.ClientCAFile). /healthz and /readyz are always open.
	Auth string `yaml:"auth"`
	// TokenFile holds the accepted bearer tokens, one a line ('#'
	// comments and blank lines ignored). It is read again when it
	// changes, so tokens rotate without a restart.
	TokenFile string `yaml:"token_file"`
	// Metrics is open (the default: /metrics needs no credentials) or
	// protected (it needs them like every other endpoint).
	Metrics string `yaml:"metrics"`
	TLS     APITLS `yaml:"tls"`
	// Samples is full (the default), redacted (the fields named by
	// Redact replaced by "***"; a value that is not JSON is withheld) or
	// off (no record content kept or shown) for the samples of /ui and
	// the record values of /state.
	Samples string `yaml:"samples"`
	// Redact lists JSON paths (customer.email, items.*.card; a list is
	// crossed without naming its index) replaced under samples: redacted.
	Redact []string `yaml:"redact"`
	// SampleMaxBytes caps each sample's shown value (default 1024).
	SampleMaxBytes int `yaml:"sample_max_bytes"`

	// Tokens are the bearer tokens of SIDESTREAM_API_TOKENS (never from
	// the file), comma- or space-separated.
	Tokens Secret `yaml:"-"`
}

// APITLS makes the HTTP API listen on TLS. The files are read again when
// they change (cert-manager rotation).
type APITLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ClientCAFile signs the client certificates auth: mtls accepts.
	ClientCAFile string `yaml:"client_ca_file"`
}

// Enabled reports whether the API listens on TLS.
func (t APITLS) Enabled() bool { return t.CertFile != "" }

// Values of the api section.
const (
	APIAuthNone   = "none"
	APIAuthBearer = "bearer"
	APIAuthMTLS   = "mtls"

	APIMetricsOpen      = "open"
	APIMetricsProtected = "protected"

	SamplesFull     = "full"
	SamplesRedacted = "redacted"
	SamplesOff      = "off"

	// DefaultSampleMaxBytes is api.sample_max_bytes' default.
	DefaultSampleMaxBytes = 1024
	maxSampleMaxBytes     = 1 << 20
	// minTokenLen refuses tokens a person could guess.
	minTokenLen = 16
)

// The environment variables of the api section. The Helm chart sets
// SIDESTREAM_API_TOKEN_FILE to a mounted Secret.
const (
	EnvAPIAuth         = "SIDESTREAM_API_AUTH"
	EnvAPITokenFile    = "SIDESTREAM_API_TOKEN_FILE"
	EnvAPITokens       = "SIDESTREAM_API_TOKENS"
	EnvAPIMetrics      = "SIDESTREAM_API_METRICS"
	EnvAPITLSCertFile  = "SIDESTREAM_API_TLS_CERT_FILE"
	EnvAPITLSKeyFile   = "SIDESTREAM_API_TLS_KEY_FILE"
	EnvAPITLSClientCA  = "SIDESTREAM_API_TLS_CLIENT_CA_FILE"
	EnvAPISamples      = "SIDESTREAM_API_SAMPLES"
	EnvAPIRedact       = "SIDESTREAM_API_REDACT"
	EnvAPISampleMaxLen = "SIDESTREAM_API_SAMPLE_MAX_BYTES"
)

var apiEnv = map[string]string{
	"api.auth":               EnvAPIAuth,
	"api.token_file":         EnvAPITokenFile,
	"api.metrics":            EnvAPIMetrics,
	"api.tls.cert_file":      EnvAPITLSCertFile,
	"api.tls.key_file":       EnvAPITLSKeyFile,
	"api.tls.client_ca_file": EnvAPITLSClientCA,
	"api.samples":            EnvAPISamples,
	"api.redact":             EnvAPIRedact,
	"api.sample_max_bytes":   EnvAPISampleMaxLen,
}

// ProtectMetrics reports whether /metrics needs credentials.
func (a API) ProtectMetrics() bool { return a.Metrics == APIMetricsProtected }

// SplitTokens splits SIDESTREAM_API_TOKENS (commas or white space).
func SplitTokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
}

// RedactPath splits a path of api.redact into its segments.
func RedactPath(p string) []string { return strings.Split(p, ".") }

func oneOf(v string, ok ...string) bool {
	for _, o := range ok {
		if v == o {
			return true
		}
	}
	return false
}

// checkRedactPath says what is wrong with one api.redact path.
func checkRedactPath(p string) error {
	switch {
	case p == "":
		return errors.New("a path must not be empty")
	case strings.HasPrefix(p, "$"):
		return fmt.Errorf("%q: write the path without \"$.\" (customer.email)", p)
	}
	segs := RedactPath(p)
	if len(segs) > 32 {
		return fmt.Errorf("%q has more than 32 segments", p)
	}
	for _, s := range segs {
		if s == "" {
			return fmt.Errorf("%q has an empty segment (fields are separated by one '.')", p)
		}
	}
	return nil
}

// validateAPI checks each field of the api section as the file gives it
// and resolves its file paths against the file's directory. The checks
// between fields wait for ApplyAPI: the environment may give the rest.
func (d *doc) validateAPI() {
	a := &d.cfg.API
	a.Auth, a.Metrics, a.Samples = strings.ToLower(a.Auth), strings.ToLower(a.Metrics), strings.ToLower(a.Samples)
	if a.Auth == "" {
		a.Auth = APIAuthNone
	}
	if a.Metrics == "" {
		a.Metrics = APIMetricsOpen
	}
	if a.Samples == "" {
		a.Samples = SamplesFull
	}
	if n, ok := d.nodes["api.sample_max_bytes"]; ok && n.Tag == "!!int" && isZero(n.Value) {
		d.at("api.sample_max_bytes", "api.sample_max_bytes must not be 0; remove it to get the default (%d), or set api.samples: off", DefaultSampleMaxBytes)
	} else if a.SampleMaxBytes < 0 || a.SampleMaxBytes > maxSampleMaxBytes {
		d.at("api.sample_max_bytes", "api.sample_max_bytes must be 1 to %d, got %d", maxSampleMaxBytes, a.SampleMaxBytes)
	}
	if a.SampleMaxBytes <= 0 {
		a.SampleMaxBytes = DefaultSampleMaxBytes
	}
	if !oneOf(a.Auth, APIAuthNone, APIAuthBearer, APIAuthMTLS) {
		d.at("api.auth", "api.auth must be %q, %q or %q, got %q", APIAuthNone, APIAuthBearer, APIAuthMTLS, a.Auth)
	}
	if !oneOf(a.Metrics, APIMetricsOpen, APIMetricsProtected) {
		d.at("api.metrics", "api.metrics must be %q or %q, got %q", APIMetricsOpen, APIMetricsProtected, a.Metrics)
	}
	if !oneOf(a.Samples, SamplesFull, SamplesRedacted, SamplesOff) {
		d.at("api.samples", "api.samples must be %q, %q or %q, got %q", SamplesFull, SamplesRedacted, SamplesOff, a.Samples)
	}
	for i, p := range a.Redact {
		if err := checkRedactPath(p); err != nil {
			d.at(fmt.Sprintf("api.redact[%d]", i), "api.redact[%d]: %v", i, err)
		}
	}
	for _, f := range apiFiles(a) {
		if *f.value == "" {
			continue
		}
		if !filepath.IsAbs(*f.value) {
			*f.value = filepath.Join(d.dir, *f.value)
		}
		if err := f.check(*f.value); err != nil {
			d.at(f.path, "%s: %v", f.path, err)
		}
	}
}

// apiFile is one file field of the api section.
type apiFile struct {
	path  string
	value *string
	check func(string) error
}

func apiFiles(a *API) []apiFile {
	return []apiFile{
		{"api.token_file", &a.TokenFile, checkTokenFile},
		{"api.tls.cert_file", &a.TLS.CertFile, func(p string) error { return checkPEMFile(pemServerCert, p) }},
		{"api.tls.key_file", &a.TLS.KeyFile, func(p string) error { return checkPEMFile(pemKey, p) }},
		{"api.tls.client_ca_file", &a.TLS.ClientCAFile, func(p string) error { return checkPEMFile(pemCA, p) }},
	}
}

// checkTokenFile checks the token file holds at least one token, each
// long enough; it never quotes a token.
func checkTokenFile(path string) error {
	if _, err := statRegular(path); err != nil {
		return err
	}
	b, err := readLimited(path, maxPEMBytes)
	if err != nil {
		return fmt.Errorf("file %q cannot be read: %v", path, cause(err))
	}
	n := 0
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if len(l) < minTokenLen {
			return fmt.Errorf("file %q: the token on line %d is shorter than %d characters (make one with: openssl rand -hex 32)", path, i+1, minTokenLen)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("file %q holds no token (one a line; make one with: openssl rand -hex 32)", path)
	}
	return nil
}

// APIOverrides are the api settings from the environment. Empty fields
// leave the file's value.
type APIOverrides struct {
	Auth, TokenFile, Metrics, Samples, Redact, SampleMaxBytes string
	CertFile, KeyFile, ClientCAFile                           string // relative to the working directory
	Tokens                                                    Secret
}

// APIOverridesFromEnv reads the SIDESTREAM_API_* variables.
func APIOverridesFromEnv(getenv func(string) string) APIOverrides {
	t := strings.TrimSpace
	return APIOverrides{
		Auth: t(getenv(EnvAPIAuth)), TokenFile: getenv(EnvAPITokenFile), Metrics: t(getenv(EnvAPIMetrics)),
		Samples: t(getenv(EnvAPISamples)), Redact: getenv(EnvAPIRedact), SampleMaxBytes: t(getenv(EnvAPISampleMaxLen)),
		CertFile: getenv(EnvAPITLSCertFile), KeyFile: getenv(EnvAPITLSKeyFile), ClientCAFile: getenv(EnvAPITLSClientCA),
		Tokens: Secret(getenv(EnvAPITokens)),
	}
}

// ApplyAPI sets the api overrides, then checks the section as a whole. A
// problem with a value from the file points at FILE:LINE:COL; one from
// the environment names the variable. No message quotes a token.
func (c *Config) ApplyAPI(o APIOverrides) error {
	a := &c.API
	if a.Auth == "" {
		a.Auth = APIAuthNone
	}
	if a.Metrics == "" {
		a.Metrics = APIMetricsOpen
	}
	if a.Samples == "" {
		a.Samples = SamplesFull
	}
	if a.SampleMaxBytes <= 0 {
		a.SampleMaxBytes = DefaultSampleMaxBytes
	}
	k := newOverrideCheck(c, "api", apiEnv)
	k.apiOverrides(o)
	if err := k.err(); err != nil {
		return err
	}
	k.apiTLSPair()
	k.apiAuth()
	return k.err()
}

// apiOverrides applies and checks each SIDESTREAM_API_* value on its own.
func (k *overrideCheck) apiOverrides(o APIOverrides) {
	a := &k.c.API
	enum := func(path, v string, dst *string, ok ...string) {
		if v == "" {
			return
		}
		v = strings.ToLower(v)
		if !oneOf(v, ok...) {
			k.problem("%s must be %s, got %q", apiEnv[path], quoteList(ok), v)
			return
		}
		*dst, k.fromEnv[path] = v, true
	}
	enum("api.auth", o.Auth, &a.Auth, APIAuthNone, APIAuthBearer, APIAuthMTLS)
	enum("api.metrics", o.Metrics, &a.Metrics, APIMetricsOpen, APIMetricsProtected)
	enum("api.samples", o.Samples, &a.Samples, SamplesFull, SamplesRedacted, SamplesOff)
	if o.Redact != "" {
		a.Redact, k.fromEnv["api.redact"] = splitList(o.Redact), true
		for _, p := range a.Redact {
			if err := checkRedactPath(p); err != nil {
				k.problem("%s: %v", EnvAPIRedact, err)
			}
		}
	}
	if o.SampleMaxBytes != "" {
		n, err := strconv.Atoi(o.SampleMaxBytes)
		if err != nil || n < 1 || n > maxSampleMaxBytes {
			k.problem("%s must be 1 to %d, got %q", EnvAPISampleMaxLen, maxSampleMaxBytes, o.SampleMaxBytes)
		} else {
			a.SampleMaxBytes, k.fromEnv["api.sample_max_bytes"] = n, true
		}
	}
	files := map[string]string{"api.token_file": o.TokenFile, "api.tls.cert_file": o.CertFile, "api.tls.key_file": o.KeyFile, "api.tls.client_ca_file": o.ClientCAFile}
	for _, f := range apiFiles(a) {
		v := files[f.path]
		if v == "" {
			continue
		}
		*f.value, k.fromEnv[f.path] = v, true
		if err := f.check(v); err != nil {
			k.problem("%s: %v", apiEnv[f.path], err)
		}
	}
	if o.Tokens != "" {
		a.Tokens = o.Tokens
		for i, t := range SplitTokens(o.Tokens.Reveal()) {
			if len(t) < minTokenLen {
				k.problem("%s: token %d is shorter than %d characters (make one with: openssl rand -hex 32)", EnvAPITokens, i+1, minTokenLen)
			}
		}
		if len(SplitTokens(o.Tokens.Reveal())) == 0 {
			k.problem("%s holds no token", EnvAPITokens)
		}
	}
}

// apiTLSPair: a certificate needs its key, and the two must make a pair.
func (k *overrideCheck) apiTLSPair() {
	t := k.c.API.TLS
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		k.report("api.tls.cert_file", "%s is set without %s: the API's certificate needs its private key", k.name("api.tls.cert_file"), k.either("api.tls.key_file"))
	case t.KeyFile != "" && t.CertFile == "":
		k.report("api.tls.key_file", "%s is set without %s: a private key needs its certificate", k.name("api.tls.key_file"), k.either("api.tls.cert_file"))
	case t.CertFile != "":
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			k.report("api.tls.key_file", "%s and %s do not make a key pair: %v", k.name("api.tls.cert_file"), k.name("api.tls.key_file"), err)
		}
	}
}

// apiAuth: what each auth mode needs, and settings that its mode never reads.
func (k *overrideCheck) apiAuth() {
	a := &k.c.API
	t := a.TLS
	auth := fmt.Sprintf("%s is %q", k.name("api.auth"), a.Auth)
	switch a.Auth {
	case APIAuthBearer:
		if a.TokenFile == "" && a.Tokens == "" {
			k.report("api.auth", "%s: the tokens come from %s or %s (keep them out of the topology file)", auth, k.either("api.token_file"), EnvAPITokens)
		}
	case APIAuthMTLS:
		if !t.Enabled() {
			k.report("api.auth", "%s: the API must listen on TLS: set %s and %s", auth, k.either("api.tls.cert_file"), k.either("api.tls.key_file"))
		}
		if t.ClientCAFile == "" {
			k.report("api.auth", "%s: %s is required, the CA that signs the client certificates", auth, k.either("api.tls.client_ca_file"))
		}
	}
	if a.Auth != APIAuthBearer && (a.TokenFile != "" || a.Tokens != "") {
		at := "api.token_file"
		if a.TokenFile == "" {
			at = "api.auth"
		}
		k.report(at, "bearer tokens are given (api.token_file, %s or %s) but %s: set it to %q, or remove them", EnvAPITokenFile, EnvAPITokens, auth, APIAuthBearer)
	}
	if a.Auth != APIAuthMTLS && t.ClientCAFile != "" {
		k.report("api.tls.client_ca_file", "%s is read only with api.auth: mtls, but %s", k.name("api.tls.client_ca_file"), auth)
	}
	if a.Auth == APIAuthNone && a.Metrics == APIMetricsProtected {
		k.report("api.metrics", "%s is %q, but %s: nothing can protect it; set api.auth", k.name("api.metrics"), a.Metrics, auth)
	}
	if len(a.Redact) > 0 && a.Samples != SamplesRedacted {
		k.report("api.redact", "%s is read only with api.samples: redacted, but %s is %q", k.name("api.redact"), k.name("api.samples"), a.Samples)
	}
	if a.Samples == SamplesRedacted && len(a.Redact) == 0 {
		k.report("api.samples", "%s is %q but %s lists no path: name the fields to hide (customer.email), or use %q", k.name("api.samples"), a.Samples, k.either("api.redact"), SamplesOff)
	}
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
