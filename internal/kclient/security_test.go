package kclient

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient/kclienttest"
)

func TestSecurityOpts(t *testing.T) {
	ca, cert, key := kclienttest.PKI(t)
	sasl := func(m string) config.SASL { return config.SASL{Mechanism: m, Username: "u", Password: "p"} }
	tests := []struct {
		name     string
		sec      config.Security
		wantSASL string // "" for none
		wantTLS  bool
		wantErr  string
	}{
		{name: "default", sec: config.Security{}},
		{name: "plaintext", sec: config.Security{Protocol: config.ProtocolPlaintext}},
		{name: "ssl, system roots", sec: config.Security{Protocol: config.ProtocolSSL}, wantTLS: true},
		{name: "ssl, everything", sec: config.Security{Protocol: config.ProtocolSSL, TLS: config.TLS{CAFile: ca, CertFile: cert, KeyFile: key, ServerName: "kafka.test"}}, wantTLS: true},
		{name: "plain", sec: config.Security{Protocol: config.ProtocolSASLPlaintext, SASL: sasl(config.SASLPlain)}, wantSASL: "PLAIN"},
		{name: "scram 256", sec: config.Security{Protocol: config.ProtocolSASLPlaintext, SASL: sasl(config.SASLScramSHA256)}, wantSASL: "SCRAM-SHA-256"},
		{name: "scram 512 over TLS", sec: config.Security{Protocol: config.ProtocolSASLSSL, SASL: sasl(config.SASLScramSHA512), TLS: config.TLS{CAFile: ca}}, wantSASL: "SCRAM-SHA-512", wantTLS: true},
		{name: "no password", sec: config.Security{Protocol: config.ProtocolSASLSSL, SASL: config.SASL{Mechanism: config.SASLPlain, Username: "u"}}, wantErr: "needs a username and a password"},
		{name: "bad mechanism", sec: config.Security{Protocol: config.ProtocolSASLSSL, SASL: sasl("GSSAPI")}, wantErr: `mechanism "GSSAPI"`},
		{name: "bad protocol", sec: config.Security{Protocol: "tls"}, wantErr: `security.protocol "tls"`},
		{name: "cert without key", sec: config.Security{Protocol: config.ProtocolSSL, TLS: config.TLS{CertFile: cert}}, wantErr: "give both or neither"},
		{name: "CA not PEM", sec: config.Security{Protocol: config.ProtocolSSL, TLS: config.TLS{CAFile: key}}, wantErr: "holds no PEM certificate"},
		{name: "CA missing", sec: config.Security{Protocol: config.ProtocolSSL, TLS: config.TLS{CAFile: ca + ".gone"}}, wantErr: "no such file"},
		{name: "SASL settings ignored without a SASL protocol", sec: config.Security{Protocol: config.ProtocolSSL, SASL: sasl(config.SASLPlain)}, wantTLS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := SecurityOpts(tt.sec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), `"p"`) {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names, tc := kclienttest.OptValues(t, opts...)
			if got := strings.Join(names, ","); got != tt.wantSASL {
				t.Errorf("SASL = %q, want %q", got, tt.wantSASL)
			}
			if (tc != nil) != tt.wantTLS {
				t.Fatalf("TLS config %v, want TLS %v", tc, tt.wantTLS)
			}
			if tc == nil {
				return
			}
			if tc.MinVersion != tls.VersionTLS12 || tc.InsecureSkipVerify {
				t.Errorf("TLS min version %x, skip verify %v", tc.MinVersion, tc.InsecureSkipVerify)
			}
			if tt.sec.TLS.CAFile != "" && tc.RootCAs == nil || tt.sec.TLS.CAFile == "" && tc.RootCAs != nil {
				t.Errorf("RootCAs = %v with ca_file %q", tc.RootCAs, tt.sec.TLS.CAFile)
			}
			if (tt.sec.TLS.CertFile != "") != (len(tc.Certificates) == 1) {
				t.Errorf("%d client certificates with cert_file %q", len(tc.Certificates), tt.sec.TLS.CertFile)
			}
			if tc.ServerName != tt.sec.TLS.ServerName {
				t.Errorf("ServerName = %q, want %q", tc.ServerName, tt.sec.TLS.ServerName)
			}
		})
	}
	opts, err := SecurityOpts(config.Security{Protocol: config.ProtocolSSL, TLS: config.TLS{InsecureSkipVerify: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, tc := kclienttest.OptValues(t, opts...); tc == nil || !tc.InsecureSkipVerify {
		t.Errorf("insecure_skip_verify not passed on: %v", tc)
	}
}

func TestConnHint(t *testing.T) {
	scram := config.Security{Protocol: config.ProtocolSASLPlaintext, SASL: config.SASL{Mechanism: config.SASLScramSHA256, Username: "alice", Password: "secret-pw"}}
	ssl := config.Security{Protocol: config.ProtocolSSL}
	plain := config.Security{Protocol: config.ProtocolPlaintext}
	tests := []struct {
		name string
		err  error
		sec  config.Security
		want string // "" for no hint
	}{
		{"auth", fmt.Errorf("x: %w", kerr.SaslAuthenticationFailed), scram, "authentication failed: the brokers refused SASL SCRAM-SHA-256 for user \"alice\""},
		{"mechanism", kerr.UnsupportedSaslMechanism, scram, "do not enable SASL SCRAM-SHA-256"},
		{"unknown CA", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, ssl, "security.tls.ca_file"},
		{"host name", fmt.Errorf("dial: %w", x509.HostnameError{Host: "127.0.0.1"}), ssl, "security.tls.server_name"},
		{"plaintext listener", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, ssl, "this listener is plaintext"},
		{"TLS listener", fmt.Errorf("read: EOF"), plain, "does this listener expect TLS or SASL"},
		{"refused", fmt.Errorf("dial tcp 127.0.0.1:1: connect: connection refused"), plain, ""},
		{"nil", nil, plain, ""},
	}
	for _, tt := range tests {
		got := ConnHint(tt.err, tt.sec)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s: hint %q, want %q", tt.name, got, tt.want)
		}
		if strings.Contains(got, "secret-pw") {
			t.Errorf("%s: the hint shows the password", tt.name)
		}
	}
}
