package kclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sidestream/sidestream/internal/config"
)

// SecurityOpts turns the security settings into franz-go options: a TLS
// dialer for ssl and sasl_ssl, a SASL mechanism for sasl_plaintext and
// sasl_ssl, nothing for plaintext. Every client the router creates (the
// group's, the admin, the state restores, the tools') gets them: the
// processor adds them to its options, the tools to their clients. Files
// are read here, once; an error names the setting, never the password.
func SecurityOpts(sec config.Security) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch sec.Protocol {
	case "", config.ProtocolPlaintext, config.ProtocolSSL, config.ProtocolSASLPlaintext, config.ProtocolSASLSSL:
	default:
		return nil, fmt.Errorf("security.protocol %q: use plaintext, ssl, sasl_plaintext or sasl_ssl", sec.Protocol)
	}
	if sec.UsesTLS() {
		tc, err := TLSConfig(sec.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if sec.UsesSASL() {
		m, err := mechanism(sec.SASL)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// TLSConfig builds the client TLS configuration: the CA file's
// certificates as roots (the system's when none), the client certificate
// when one is given, the server name, and TLS 1.2 at least.
func TLSConfig(t config.TLS) (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName, // "": franz-go uses each broker's host
		InsecureSkipVerify: t.InsecureSkipVerify,
	}
	if t.CAFile != "" {
		b, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("security.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("security.tls.ca_file %q holds no PEM certificate", t.CAFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("security.tls.cert_file %q and key_file %q: %w", t.CertFile, t.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	case t.CertFile != "" || t.KeyFile != "":
		return nil, errors.New("security.tls.cert_file and key_file go together: give both or neither")
	}
	return tc, nil
}

func mechanism(s config.SASL) (sasl.Mechanism, error) {
	switch s.Mechanism {
	case config.SASLOAuthBearer:
		if s.OAuth.TokenURL == "" || s.OAuth.ClientID == "" || s.OAuth.ClientSecret == "" {
			return nil, fmt.Errorf("SASL OAUTHBEARER needs a token endpoint, a client id and a client secret (security.sasl.oauth.token_url, client_id, %s)", config.EnvSASLOAuthClientSecret)
		}
		return oauthMechanism(s.OAuth), nil
	case config.SASLAWSMSKIAM:
		// Loading reads the environment and the shared files; no
		// request goes out before the first authentication.
		return awsMechanism(context.Background())
	}
	if s.Username == "" || s.Password == "" {
		return nil, fmt.Errorf("SASL %s needs a username and a password (security.sasl.username, %s)", s.Mechanism, config.EnvSASLPassword)
	}
	switch s.Mechanism {
	case config.SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password.Reveal()}.AsMechanism(), nil
	case config.SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password.Reveal()}.AsSha256Mechanism(), nil
	case config.SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password.Reveal()}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("security.sasl.mechanism %q: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM", s.Mechanism)
}

// ConnHint says what a connection error most likely means for the
// security settings, or "" when it says nothing about them. It goes into
// the /readyz reason and the log next to the error itself.
func ConnHint(err error, sec config.Security) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		alert     tls.AlertError
		token     *TokenError
		awsCreds  *AWSCredentialsError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &token):
		return tokenHint(token)
	case errors.Is(err, ErrNoAWSCredentials):
		return "AWS_MSK_IAM: no AWS credentials in any source of the AWS chain; give the router AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, an IRSA or EKS Pod Identity role, a profile, or an instance profile"
	case errors.As(err, &awsCreds):
		return "AWS_MSK_IAM: the AWS credential source the chain chose gave no credentials (the brokers were not asked): retrying"
	case errors.Is(err, kerr.SaslAuthenticationFailed) && sec.SASL.Mechanism == config.SASLOAuthBearer:
		return "authentication failed: the brokers refused the OAUTHBEARER token; check that the brokers trust the token endpoint's issuer and that the token carries the subject and scope they expect"
	case errors.Is(err, kerr.SaslAuthenticationFailed) && sec.SASL.Mechanism == config.SASLAWSMSKIAM:
		return "authentication failed: MSK refused the IAM signature; check the AWS credentials, the region (AWS_REGION when the broker host does not name it) and that the IAM policy allows kafka-cluster:Connect"
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return fmt.Sprintf("authentication failed: the brokers refused SASL %s for user %q; check the username and password (%s) and the mechanism", sec.SASL.Mechanism, sec.SASL.Username, config.EnvSASLPassword)
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return fmt.Sprintf("authentication failed: the brokers do not enable SASL %s on this listener", sec.SASL.Mechanism)
	case errors.Is(err, kerr.IllegalSaslState):
		return "authentication failed: the listener does not expect SASL; check security.protocol and the broker port"
	case errors.As(err, &unknownCA):
		return "TLS: the broker's certificate is not signed by a trusted CA; set security.tls.ca_file to the CA that signed it"
	case errors.As(err, &hostname):
		return "TLS: the broker's certificate does not name the host dialled; set security.tls.server_name to a name it carries"
	case errors.As(err, &invalid):
		return "TLS: the broker's certificate is not valid (expired or not for server use)"
	case errors.As(err, &record):
		return "TLS: the broker answered without TLS; security.protocol is " + sec.Protocol + " but this listener is plaintext"
	case errors.As(err, &alert):
		return "TLS: the broker refused the handshake (does it require a client certificate? set security.tls.cert_file and key_file)"
	}
	if s := err.Error(); !sec.UsesTLS() && (strings.Contains(s, "EOF") || strings.Contains(s, "connection reset")) {
		return fmt.Sprintf("the broker closed the connection: security.protocol is %s; does this listener expect TLS or SASL?", sec.Protocol)
	}
	return ""
}

// WithHint appends ConnHint's text to the error's.
func WithHint(err error, sec config.Security) string {
	if h := ConnHint(err, sec); h != "" {
		return err.Error() + " (" + h + ")"
	}
	return err.Error()
}
