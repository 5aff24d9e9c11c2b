package processor

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/sidestream/sidestream/topology"
)

// pki writes a CA, a client certificate it signed and the client's key
// into a temp dir and returns their paths.
func pki(t *testing.T) (ca, cert, key string) {
	t.Helper()
	dir := t.TempDir()
	gen := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caKey, clKey := gen(), gen()
	now := time.Now()
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	clT := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "router"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	clDER, err := x509.CreateCertificate(rand.Reader, clT, caCert, &clKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(clKey)
	if err != nil {
		t.Fatal(err)
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("client.pem", "CERTIFICATE", clDER), write("client-key.pem", "PRIVATE KEY", keyDER)
}

// optValues builds a client (it does not connect) and reads back the
// SASL mechanisms and TLS config it was given.
func optValues(t *testing.T, opts ...kgo.Opt) ([]string, *tls.Config) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var names []string
	if ms, ok := cl.OptValue(kgo.SASL).([]sasl.Mechanism); ok {
		for _, m := range ms {
			names = append(names, m.Name())
		}
	}
	tc, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
	return names, tc
}

func TestClientOpts(t *testing.T) {
	ca, cert, key := pki(t)
	sasl := func(m string) topology.SASL { return topology.SASL{Mechanism: m, Username: "u", Password: "p"} }
	tests := []struct {
		name     string
		sec      topology.Security
		wantSASL string // "" for none
		wantTLS  bool
		wantErr  string
	}{
		{name: "default", sec: topology.Security{}},
		{name: "plaintext", sec: topology.Security{Protocol: topology.ProtocolPlaintext}},
		{name: "ssl, system roots", sec: topology.Security{Protocol: topology.ProtocolSSL}, wantTLS: true},
		{name: "ssl, everything", sec: topology.Security{Protocol: topology.ProtocolSSL, TLS: topology.TLS{CAFile: ca, CertFile: cert, KeyFile: key, ServerName: "kafka.test"}}, wantTLS: true},
		{name: "plain", sec: topology.Security{Protocol: topology.ProtocolSASLPlaintext, SASL: sasl(topology.SASLPlain)}, wantSASL: "PLAIN"},
		{name: "scram 256", sec: topology.Security{Protocol: topology.ProtocolSASLPlaintext, SASL: sasl(topology.SASLScramSHA256)}, wantSASL: "SCRAM-SHA-256"},
		{name: "scram 512 over TLS", sec: topology.Security{Protocol: topology.ProtocolSASLSSL, SASL: sasl(topology.SASLScramSHA512), TLS: topology.TLS{CAFile: ca}}, wantSASL: "SCRAM-SHA-512", wantTLS: true},
		{name: "no password", sec: topology.Security{Protocol: topology.ProtocolSASLSSL, SASL: topology.SASL{Mechanism: topology.SASLPlain, Username: "u"}}, wantErr: "needs a username and a password"},
		{name: "bad mechanism", sec: topology.Security{Protocol: topology.ProtocolSASLSSL, SASL: sasl("GSSAPI")}, wantErr: `mechanism "GSSAPI"`},
		{name: "bad protocol", sec: topology.Security{Protocol: "tls"}, wantErr: `security.protocol "tls"`},
		{name: "cert without key", sec: topology.Security{Protocol: topology.ProtocolSSL, TLS: topology.TLS{CertFile: cert}}, wantErr: "give both or neither"},
		{name: "CA not PEM", sec: topology.Security{Protocol: topology.ProtocolSSL, TLS: topology.TLS{CAFile: key}}, wantErr: "holds no PEM certificate"},
		{name: "CA missing", sec: topology.Security{Protocol: topology.ProtocolSSL, TLS: topology.TLS{CAFile: ca + ".gone"}}, wantErr: "no such file"},
		{name: "SASL settings ignored without a SASL protocol", sec: topology.Security{Protocol: topology.ProtocolSSL, SASL: sasl(topology.SASLPlain)}, wantTLS: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := ClientOpts(tt.sec)
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
			names, tc := optValues(t, opts...)
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
	opts, err := ClientOpts(topology.Security{Protocol: topology.ProtocolSSL, TLS: topology.TLS{InsecureSkipVerify: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, tc := optValues(t, opts...); tc == nil || !tc.InsecureSkipVerify {
		t.Errorf("insecure_skip_verify not passed on: %v", tc)
	}
}

// TestEveryClientIsSecured: the group client, the admin client and the
// restore client (all built from the processor's options) get the
// topology's TLS and SASL settings.
func TestEveryClientIsSecured(t *testing.T) {
	ca, _, _ := pki(t)
	src := fmt.Sprintf(`application_id: unit
brokers: [127.0.0.1:9092]
inputs: [{topic: in}]
routing: {default: all}
routes: [{name: all, topic: out}]
dirty: {topic: dirty}
security:
  protocol: sasl_ssl
  tls: {ca_file: %q}
  sasl: {mechanism: SCRAM-SHA-512, username: router}
`, ca)
	cfg, err := topology.Load("unit.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(topology.Overrides{Security: topology.SecurityOverrides{Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	top, err := topology.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(top, WithKgoOpts(kgo.ClientID("x")))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, opts []kgo.Opt) {
		t.Helper()
		names, tc := optValues(t, opts...)
		if strings.Join(names, ",") != "SCRAM-SHA-512" || tc == nil || tc.RootCAs == nil {
			t.Errorf("%s: SASL %v, TLS %v: want SCRAM-SHA-512 over TLS with the CA", what, names, tc)
		}
	}
	check("group client", p.clientOpts())
	check("admin and restore clients", p.opts.kgoOpts)
	_, admCl, err := newAdmin(top.Config.Brokers, p.opts.kgoOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if ms, _ := admCl.OptValue(kgo.SASL).([]sasl.Mechanism); len(ms) != 1 {
		t.Errorf("admin client SASL = %v", ms)
	}

	// A config whose settings cannot be used fails New, not the first dial.
	top.Config.Security.SASL.Password = ""
	if _, err := New(top); err == nil || !strings.Contains(err.Error(), "password") {
		t.Errorf("New without a password: %v", err)
	}
}

func TestConnHint(t *testing.T) {
	scram := topology.Security{Protocol: topology.ProtocolSASLPlaintext, SASL: topology.SASL{Mechanism: topology.SASLScramSHA256, Username: "alice", Password: "secret-pw"}}
	ssl := topology.Security{Protocol: topology.ProtocolSSL}
	plain := topology.Security{Protocol: topology.ProtocolPlaintext}
	tests := []struct {
		name string
		err  error
		sec  topology.Security
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
