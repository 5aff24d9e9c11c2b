package config

import (
	"crypto/tls"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Overrides are values from the environment or flags that win over the
// file. Empty fields leave the file's value.
type Overrides struct {
	Brokers        []string
	ApplicationID  string
	Guarantee      string
	CommitInterval string
	Security       SecurityOverrides
	Registry       RegistryOverrides
	// StateStore ("memory" or "pebble") and StateDir override the state
	// section (SIDESTREAM_STATE_STORE, SIDESTREAM_STATE_DIR).
	StateStore string
	StateDir   string
	// OnChangelogLoss overrides state.on_changelog_loss
	// (SIDESTREAM_STATE_ON_CHANGELOG_LOSS).
	OnChangelogLoss string
}

// SecurityOverrides are the security settings from the environment (the
// password belongs there, not in the file). Empty fields leave the file's
// value.
type SecurityOverrides struct {
	Protocol  string
	Mechanism string
	Username  string
	Password  Secret
	// The OAUTHBEARER settings (security.sasl.oauth); Scopes is split
	// on commas and spaces.
	OAuthTokenURL     string
	OAuthClientID     string
	OAuthClientSecret Secret
	OAuthScopes       string
	CAFile            string // relative to the working directory
	CertFile          string
	KeyFile           string
	ServerName        string
	// InsecureSkipVerify is "true" or "false" (any strconv.ParseBool
	// spelling); "" leaves the file's value.
	InsecureSkipVerify string
}

// The environment variables of the security settings. The Helm chart sets
// the SASL ones from kafka.existingSecret.
const (
	EnvSecurityProtocol = "SIDESTREAM_SECURITY_PROTOCOL"
	EnvSASLMechanism    = "SIDESTREAM_SASL_MECHANISM"
	EnvSASLUsername     = "SIDESTREAM_SASL_USERNAME"
	EnvSASLPassword     = "SIDESTREAM_SASL_PASSWORD"
	// The OAUTHBEARER client secret is read from here only.
	EnvSASLOAuthTokenURL     = "SIDESTREAM_SASL_OAUTH_TOKEN_URL"
	EnvSASLOAuthClientID     = "SIDESTREAM_SASL_OAUTH_CLIENT_ID"
	EnvSASLOAuthClientSecret = "SIDESTREAM_SASL_OAUTH_CLIENT_SECRET"
	EnvSASLOAuthScopes       = "SIDESTREAM_SASL_OAUTH_SCOPES"
	EnvTLSCAFile             = "SIDESTREAM_TLS_CA_FILE"
	EnvTLSCertFile           = "SIDESTREAM_TLS_CERT_FILE"
	EnvTLSKeyFile            = "SIDESTREAM_TLS_KEY_FILE"
	EnvTLSServerName         = "SIDESTREAM_TLS_SERVER_NAME"
	EnvTLSInsecureSkipVer    = "SIDESTREAM_TLS_INSECURE_SKIP_VERIFY"
)

// securityEnv names the environment variable of each security field.
var securityEnv = map[string]string{
	"security.protocol":                 EnvSecurityProtocol,
	"security.sasl.mechanism":           EnvSASLMechanism,
	"security.sasl.username":            EnvSASLUsername,
	"security.sasl.password":            EnvSASLPassword,
	"security.sasl.oauth.token_url":     EnvSASLOAuthTokenURL,
	"security.sasl.oauth.client_id":     EnvSASLOAuthClientID,
	"security.sasl.oauth.client_secret": EnvSASLOAuthClientSecret,
	"security.sasl.oauth.scopes":        EnvSASLOAuthScopes,
	"security.tls.ca_file":              EnvTLSCAFile,
	"security.tls.cert_file":            EnvTLSCertFile,
	"security.tls.key_file":             EnvTLSKeyFile,
	"security.tls.server_name":          EnvTLSServerName,
	"security.tls.insecure_skip_verify": EnvTLSInsecureSkipVer,
}

// OverridesFromEnv reads SIDESTREAM_BROKERS (comma-separated),
// SIDESTREAM_APPLICATION_ID, SIDESTREAM_GUARANTEE,
// SIDESTREAM_COMMIT_INTERVAL and the security variables above.
func OverridesFromEnv(getenv func(string) string) Overrides {
	var o Overrides
	if b := getenv("SIDESTREAM_BROKERS"); b != "" {
		o.Brokers = splitList(b)
	}
	o.ApplicationID = getenv("SIDESTREAM_APPLICATION_ID")
	o.Guarantee = getenv("SIDESTREAM_GUARANTEE")
	o.CommitInterval = getenv("SIDESTREAM_COMMIT_INTERVAL")
	o.StateStore = getenv(EnvStateStore)
	o.StateDir = getenv(EnvStateDir)
	o.OnChangelogLoss = getenv(EnvOnChangelogLoss)
	o.Registry = RegistryOverridesFromEnv(getenv)
	o.Security = SecurityOverrides{
		Protocol:           strings.TrimSpace(getenv(EnvSecurityProtocol)),
		Mechanism:          strings.TrimSpace(getenv(EnvSASLMechanism)),
		Username:           getenv(EnvSASLUsername),
		Password:           Secret(getenv(EnvSASLPassword)),
		OAuthTokenURL:      strings.TrimSpace(getenv(EnvSASLOAuthTokenURL)),
		OAuthClientID:      getenv(EnvSASLOAuthClientID),
		OAuthClientSecret:  Secret(getenv(EnvSASLOAuthClientSecret)),
		OAuthScopes:        getenv(EnvSASLOAuthScopes),
		CAFile:             getenv(EnvTLSCAFile),
		CertFile:           getenv(EnvTLSCertFile),
		KeyFile:            getenv(EnvTLSKeyFile),
		ServerName:         getenv(EnvTLSServerName),
		InsecureSkipVerify: strings.TrimSpace(getenv(EnvTLSInsecureSkipVer)),
	}
	return o
}

// Merge returns o with every field that p sets replaced by p's.
func (o Overrides) Merge(p Overrides) Overrides {
	if len(p.Brokers) > 0 {
		o.Brokers = p.Brokers
	}
	if p.ApplicationID != "" {
		o.ApplicationID = p.ApplicationID
	}
	if p.Guarantee != "" {
		o.Guarantee = p.Guarantee
	}
	if p.CommitInterval != "" {
		o.CommitInterval = p.CommitInterval
	}
	o.Security = o.Security.merge(p.Security)
	o.Registry = o.Registry.merge(p.Registry)
	if p.StateStore != "" {
		o.StateStore = p.StateStore
	}
	if p.StateDir != "" {
		o.StateDir = p.StateDir
	}
	if p.OnChangelogLoss != "" {
		o.OnChangelogLoss = p.OnChangelogLoss
	}
	return o
}

func (o SecurityOverrides) merge(p SecurityOverrides) SecurityOverrides {
	for _, f := range []struct{ dst, src *string }{
		{&o.Protocol, &p.Protocol}, {&o.Mechanism, &p.Mechanism}, {&o.Username, &p.Username},
		{&o.CAFile, &p.CAFile}, {&o.CertFile, &p.CertFile}, {&o.KeyFile, &p.KeyFile},
		{&o.ServerName, &p.ServerName}, {&o.InsecureSkipVerify, &p.InsecureSkipVerify},
		{&o.OAuthTokenURL, &p.OAuthTokenURL}, {&o.OAuthClientID, &p.OAuthClientID}, {&o.OAuthScopes, &p.OAuthScopes},
	} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	if p.Password != "" {
		o.Password = p.Password
	}
	if p.OAuthClientSecret != "" {
		o.OAuthClientSecret = p.OAuthClientSecret
	}
	return o
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Apply sets the overrides on cfg and checks the values it sets.
func (c *Config) Apply(o Overrides) error {
	if len(o.Brokers) > 0 {
		for _, b := range o.Brokers {
			if err := checkBroker(b); err != nil {
				return err
			}
		}
		c.Brokers = o.Brokers
	}
	if o.ApplicationID != "" {
		if !appIDRe.MatchString(o.ApplicationID) {
			return fmt.Errorf("application id %q may hold only letters, digits, '.', '_' and '-'", o.ApplicationID)
		}
		c.ApplicationID = o.ApplicationID
	}
	if o.Guarantee != "" {
		g := Guarantee(o.Guarantee)
		if g != ExactlyOnce && g != AtLeastOnce {
			return fmt.Errorf("guarantee must be %q or %q, got %q", ExactlyOnce, AtLeastOnce, o.Guarantee)
		}
		c.Guarantee = g
	}
	if o.CommitInterval != "" {
		d, err := time.ParseDuration(o.CommitInterval)
		if err != nil || d <= 0 {
			return fmt.Errorf("commit interval %q is not a positive duration", o.CommitInterval)
		}
		c.CommitInterval = Duration(d)
	}
	if err := c.applySecurity(o.Security); err != nil {
		return err
	}
	if err := c.applyRegistry(o.Registry); err != nil {
		return err
	}
	if err := c.applyState(o.StateStore, o.StateDir); err != nil {
		return err
	}
	if err := c.applyOnChangelogLoss(o.OnChangelogLoss); err != nil {
		return err
	}
	if len(c.Brokers) == 0 {
		return ErrNoBrokers
	}
	return nil
}

// applySecurity sets the security overrides, then checks the security
// settings as a whole: what the file left out may come from the
// environment, so these checks wait until now. A problem with a value
// from the file points at FILE:LINE:COL; one with a value from the
// environment names the variable. No message quotes the password.
func (c *Config) applySecurity(o SecurityOverrides) error {
	k := newOverrideCheck(c, "security", securityEnv)
	k.securityOverrides(o)
	if err := k.err(); err != nil {
		return err
	}
	k.securityProtocol()
	k.securityTLSPair()
	return k.err()
}

// securityOverrides applies and checks each SIDESTREAM_SASL_*, _TLS_* and
// the protocol variable on its own.
func (k *overrideCheck) securityOverrides(o SecurityOverrides) {
	s := &k.c.Security
	if o.Protocol != "" {
		if p, ok := normProtocol(o.Protocol); ok {
			s.Protocol, k.fromEnv["security.protocol"] = p, true
		} else {
			k.problem("%s must be one of plaintext, ssl, sasl_plaintext, sasl_ssl; got %q", EnvSecurityProtocol, o.Protocol)
		}
	}
	if o.Mechanism != "" {
		if m, ok := normMechanism(o.Mechanism); ok {
			s.SASL.Mechanism, k.fromEnv["security.sasl.mechanism"] = m, true
		} else {
			k.problem("%s must be %s; got %q", EnvSASLMechanism, mechanismNames, o.Mechanism)
		}
	}
	if o.Username != "" {
		s.SASL.Username, k.fromEnv["security.sasl.username"] = o.Username, true
	}
	if o.Password != "" {
		s.SASL.Password, k.fromEnv["security.sasl.password"] = o.Password, true
	}
	if o.OAuthTokenURL != "" {
		s.SASL.OAuth.TokenURL, k.fromEnv["security.sasl.oauth.token_url"] = o.OAuthTokenURL, true
		if err := checkTokenURL(o.OAuthTokenURL); err != nil {
			k.problem("%s: %v", EnvSASLOAuthTokenURL, err)
		}
	}
	if o.OAuthClientID != "" {
		s.SASL.OAuth.ClientID, k.fromEnv["security.sasl.oauth.client_id"] = o.OAuthClientID, true
	}
	if o.OAuthClientSecret != "" {
		s.SASL.OAuth.ClientSecret, k.fromEnv["security.sasl.oauth.client_secret"] = o.OAuthClientSecret, true
	}
	if o.OAuthScopes != "" {
		s.SASL.OAuth.Scopes, k.fromEnv["security.sasl.oauth.scopes"] = strings.FieldsFunc(o.OAuthScopes, func(r rune) bool { return r == ',' || r == ' ' }), true
		for _, sc := range s.SASL.OAuth.Scopes {
			if err := checkScope(sc); err != nil {
				k.problem("%s: %v", EnvSASLOAuthScopes, err)
			}
		}
	}
	files := map[string]string{"security.tls.ca_file": o.CAFile, "security.tls.cert_file": o.CertFile, "security.tls.key_file": o.KeyFile}
	for _, f := range tlsFiles(&s.TLS) {
		v := files[f.path]
		if v == "" {
			continue
		}
		*f.value, k.fromEnv[f.path] = v, true
		if err := checkPEMFile(f.kind, v); err != nil {
			k.problem("%s: %v", f.env, err)
		}
	}
	if o.ServerName != "" {
		s.TLS.ServerName, k.fromEnv["security.tls.server_name"] = o.ServerName, true
	}
	if o.InsecureSkipVerify != "" {
		if b, err := strconv.ParseBool(o.InsecureSkipVerify); err == nil {
			s.TLS.InsecureSkipVerify, k.fromEnv["security.tls.insecure_skip_verify"] = b, true
		} else {
			k.problem("%s must be true or false, got %q", EnvTLSInsecureSkipVer, o.InsecureSkipVerify)
		}
	}
}

// securityProtocol: SASL and TLS settings only with a protocol that uses
// them, and the mechanism's own needs.
func (k *overrideCheck) securityProtocol() {
	s := &k.c.Security
	proto := fmt.Sprintf("%s is %q", k.name("security.protocol"), s.Protocol)
	if s.UsesSASL() {
		k.checkMechanism(proto)
	} else if s.SASL.set() {
		at := "security.sasl" // in the file, else a variable that set it
		for _, p := range []string{"security.sasl.oauth.scopes", "security.sasl.oauth.client_secret", "security.sasl.oauth.client_id", "security.sasl.oauth.token_url", "security.sasl.password", "security.sasl.username", "security.sasl.mechanism"} {
			if k.fromEnv[p] && !k.fileHas("security.sasl") {
				at = p
			}
		}
		k.report(at, "SASL settings are given (security.sasl or SIDESTREAM_SASL_*) but %s, which does not authenticate: set %s to sasl_ssl (or sasl_plaintext), or remove them", proto, k.either("security.protocol"))
	}
	if !s.UsesTLS() && s.TLS.set() {
		at := "security.tls" // in the file, else a variable that set it
		for _, f := range tlsFiles(&s.TLS) {
			if k.fromEnv[f.path] && !k.fileHas("security.tls") {
				at = f.path
			}
		}
		if k.fromEnv["security.tls.server_name"] && !k.fileHas("security.tls") {
			at = "security.tls.server_name"
		}
		k.report(at, "TLS settings are given (security.tls or SIDESTREAM_TLS_*) but %s, which does not use TLS: set %s to ssl or sasl_ssl, or remove them", proto, k.either("security.protocol"))
	}
}

// securityTLSPair: a client certificate needs its key, and the two must
// make a pair.
func (k *overrideCheck) securityTLSPair() {
	s := &k.c.Security
	switch t := s.TLS; {
	case t.CertFile != "" && t.KeyFile == "":
		k.report("security.tls.cert_file", "%s is set without %s: a client certificate needs its private key", k.name("security.tls.cert_file"), k.either("security.tls.key_file"))
	case t.KeyFile != "" && t.CertFile == "":
		k.report("security.tls.key_file", "%s is set without %s: a private key needs its client certificate", k.name("security.tls.key_file"), k.either("security.tls.cert_file"))
	case t.CertFile != "" && t.KeyFile != "":
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			k.report("security.tls.key_file", "%s and %s do not make a key pair: %v", k.name("security.tls.cert_file"), k.name("security.tls.key_file"), err)
		}
	}
}

// checkMechanism checks that a SASL protocol has a mechanism and what it
// needs, and nothing another mechanism would use.
func (k *overrideCheck) checkMechanism(proto string) {
	c := k.c
	s := &c.Security
	m := s.SASL.Mechanism
	mech := fmt.Sprintf("%s is %s", k.name("security.sasl.mechanism"), m)
	// notFor reports the credential fields given that m does not use.
	notFor := func(paths ...string) {
		for _, p := range paths {
			switch {
			case p == "security.sasl.username" && s.SASL.Username != "",
				p == "security.sasl.password" && s.SASL.Password != "":
				k.report(p, "%s, which does not use %s: remove it (or choose the mechanism that does)", mech, k.name(p))
			case p == "security.sasl.oauth" && s.SASL.OAuth.set():
				if c.src != nil && c.src.has(p) {
					k.report(p, "%s, which does not use security.sasl.oauth: remove it, or set the mechanism to OAUTHBEARER", mech)
				} else {
					k.report("security.sasl.mechanism", "%s, which does not use the OAUTHBEARER settings of SIDESTREAM_SASL_OAUTH_*: unset them, or set the mechanism to OAUTHBEARER", mech)
				}
			}
		}
	}
	switch m {
	case "":
		k.report("security.sasl.mechanism", "%s: %s is required (%s)", proto, k.either("security.sasl.mechanism"), mechanismNames)
	case SASLOAuthBearer:
		o := s.SASL.OAuth
		if o.TokenURL == "" {
			k.report("security.sasl.oauth", "%s: %s is required (the OAuth 2 token endpoint)", mech, k.either("security.sasl.oauth.token_url"))
		}
		if o.ClientID == "" {
			k.report("security.sasl.oauth", "%s: %s is required", mech, k.either("security.sasl.oauth.client_id"))
		}
		if o.ClientSecret == "" {
			k.report("security.sasl.oauth", "%s: a client secret is required; set %s", mech, EnvSASLOAuthClientSecret)
		}
		notFor("security.sasl.username", "security.sasl.password")
	case SASLAWSMSKIAM:
		if s.Protocol != ProtocolSASLSSL {
			k.report("security.protocol", "%s: Amazon MSK takes IAM authentication only over TLS: set %s to sasl_ssl (the brokers' port 9098)", mech, k.either("security.protocol"))
		}
		notFor("security.sasl.username", "security.sasl.password", "security.sasl.oauth")
	default: // PLAIN, SCRAM-*
		if s.SASL.Username == "" {
			k.report("security.sasl.username", "%s: %s is required", proto, k.either("security.sasl.username"))
		}
		if s.SASL.Password == "" {
			k.report("security.sasl.password", "%s: a SASL password is required; set %s (keep it out of the file)", proto, EnvSASLPassword)
		}
		notFor("security.sasl.oauth")
	}
}

// has reports whether the file wrote path or anything under it.
func (s *source) has(path string) bool {
	for p := range s.pos {
		if p == path || strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}
