package api

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	tokA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	tokB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	tokC = "cccccccccccccccccccccccccccccccc"
)

// protected are the endpoints that need credentials, with an answer a
// caller with credentials gets.
var protected = []struct{ path string }{
	{"/topology"}, {"/topology?format=dot"}, {"/tasks"}, {"/ui/state"},
	{"/state/w?key=here"}, {"/metrics"},
}

// open are the endpoints that never need credentials.
var open = []string{"/healthz", "/readyz", "/ui/", "/ui/app.js"}

func authHandler(a Auth) http.Handler {
	return Handler(Config{Probe: fakeProbe{healthy: true, ready: true}, Describer: fakeDescriber{}, Tasks: fakeTasks{},
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("sidestream_up 1\n")) }),
		UI:      &fakeUI{}, State: map[string]StateReader{"w": fakeState{}}, Auth: a})
}

func get(t *testing.T, h http.Handler, path, auth string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	// Write beside and rename, as a Secret volume swaps its files.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestBearerEveryEndpoint(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, file, "# tokens\n"+tokA+"\n")
	toks, err := NewTokens(file, []string{tokB}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var denied []string
	h := authHandler(Auth{Mode: AuthBearer, Tokens: toks, ProtectMetrics: true, Denied: func(r string) { denied = append(denied, r) }})
	for _, e := range protected {
		t.Run(e.path, func(t *testing.T) {
			for _, c := range []struct {
				name, auth string
				code       int
			}{
				{"no credentials", "", 401},
				{"another scheme", "Basic " + tokA, 401},
				{"wrong token", "Bearer " + tokC, 401},
				{"a prefix of a token", "Bearer " + tokA[:20], 401},
				{"empty token", "Bearer ", 401},
				{"token of the file", "Bearer " + tokA, 200},
				{"token of the environment", "bearer " + tokB, 200},
			} {
				rec := get(t, h, e.path, c.auth)
				if rec.Code != c.code {
					t.Errorf("%s: %d %s, want %d", c.name, rec.Code, rec.Body, c.code)
				}
				if c.code == 401 {
					if !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer ") {
						t.Errorf("%s: WWW-Authenticate %q", c.name, rec.Header().Get("WWW-Authenticate"))
					}
					if strings.Contains(rec.Body.String(), "sidestream_up") || strings.Contains(rec.Body.String(), "logs") {
						t.Errorf("%s: a refusal holds data: %s", c.name, rec.Body)
					}
				}
			}
		})
	}
	for _, p := range append(open, "/ui") {
		if rec := get(t, h, p, ""); rec.Code != 200 && rec.Code != 302 {
			t.Errorf("%s without credentials: %d, want it open", p, rec.Code)
		}
	}
	if rec := get(t, h, "/no-such-path", ""); rec.Code != 401 {
		t.Errorf("an unknown path without credentials: %d, want 401", rec.Code)
	}
	if len(denied) == 0 || denied[0] != "no_credentials" {
		t.Errorf("denied reasons %v", denied)
	}
}

func TestMetricsOpenByDefault(t *testing.T) {
	toks, err := NewTokens("", []string{tokA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := authHandler(Auth{Mode: AuthBearer, Tokens: toks})
	if rec := get(t, h, "/metrics", ""); rec.Code != 200 {
		t.Errorf("/metrics: %d, want open", rec.Code)
	}
	if rec := get(t, h, "/tasks", ""); rec.Code != 401 {
		t.Errorf("/tasks: %d, want 401", rec.Code)
	}
}

func TestAuthNoneIsOpen(t *testing.T) {
	h := authHandler(Auth{})
	for _, e := range protected {
		if rec := get(t, h, e.path, ""); rec.Code != 200 {
			t.Errorf("%s: %d", e.path, rec.Code)
		}
	}
}

// TestTokenFileRotation rotates the token file under a running server:
// the new token works and the removed one is refused, with no restart; a
// broken file keeps the last tokens.
func TestTokenFileRotation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, file, tokA+"\n")
	var errs atomic.Int64
	toks, err := NewTokens(file, nil, func(error) { errs.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(authHandler(Auth{Mode: AuthBearer, Tokens: toks}))
	defer srv.Close()
	code := func(tok string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/tasks", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code(tokA) != 200 || code(tokB) != 401 {
		t.Fatalf("before rotation: A %d, B %d", code(tokA), code(tokB))
	}
	writeFile(t, file, tokB+"\n") // same size: the stamp must still tell
	waitFor(t, "the rotated token accepted", func() bool { return code(tokB) == 200 })
	if c := code(tokA); c != 401 {
		t.Errorf("the removed token: %d, want 401", c)
	}
	writeFile(t, file, "# emptied by mistake\n")
	if code(tokB) != 200 || code(tokA) != 401 {
		t.Errorf("an empty file must keep the last tokens")
	}
	if errs.Load() == 0 {
		t.Error("the failed re-read was not reported")
	}
	writeFile(t, file, tokA+"\n"+tokC+"\n")
	waitFor(t, "the file repaired", func() bool { return code(tokC) == 200 })
	if code(tokA) != 200 || code(tokB) != 401 {
		t.Errorf("after the repair: A %d B %d", code(tokA), code(tokB))
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewTokensRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"empty": "# nothing\n", "short": "abc\n"} {
		p := filepath.Join(dir, name)
		writeFile(t, p, body)
		if _, err := NewTokens(p, nil, nil); err == nil {
			t.Errorf("%s file accepted", name)
		} else if strings.Contains(err.Error(), "abc") {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
	if _, err := NewTokens("", nil, nil); err == nil {
		t.Error("no tokens accepted")
	}
}

// ---- TLS and mTLS ------------------------------------------------------

type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, name string) pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return pki{c, key}
}

// issue signs a leaf for a server (127.0.0.1) or a client.
func (ca pki) issue(t *testing.T, name string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func pemOf(t *testing.T, c tls.Certificate) (cert, key string) {
	t.Helper()
	kb, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))
}

func caPEM(ca pki) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}))
}

// tlsServer serves h on TLS from the files under dir.
func tlsServer(t *testing.T, h http.Handler, f TLSFiles) string {
	t.Helper()
	cfg, err := TLSConfig(f, func(err error) { t.Logf("reload: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := Server("", h)
	srv.ErrorLog = nil
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	return "https://" + ln.Addr().String()
}

func client(roots *x509.CertPool, cert *tls.Certificate) *http.Client {
	c := &tls.Config{RootCAs: roots}
	if cert != nil {
		// Sent whatever CAs the server names, as a hostile client would.
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: c, DisableKeepAlives: true}}
}

func TestMTLS(t *testing.T) {
	serverCA, clientCA, otherCA := newCA(t, "server-ca"), newCA(t, "client-ca"), newCA(t, "other-ca")
	dir := t.TempDir()
	f := TLSFiles{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key"), ClientCAFile: filepath.Join(dir, "ca.crt")}
	c, k := pemOf(t, serverCA.issue(t, "router", true))
	writeFile(t, f.CertFile, c)
	writeFile(t, f.KeyFile, k)
	writeFile(t, f.ClientCAFile, caPEM(clientCA))
	url := tlsServer(t, authHandler(Auth{Mode: AuthMTLS, ProtectMetrics: true}), f)
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)

	good := clientCA.issue(t, "prometheus", false)
	foreign := otherCA.issue(t, "stranger", false)
	status := func(cl *http.Client, path string) (int, error) {
		resp, err := cl.Get(url + path)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, e := range protected {
		if code, err := status(client(roots, &good), e.path); err != nil || code != 200 {
			t.Errorf("%s with a client certificate of the CA: %d %v", e.path, code, err)
		}
		if code, err := status(client(roots, nil), e.path); err != nil || code != 401 {
			t.Errorf("%s without a client certificate: %d %v, want 401", e.path, code, err)
		}
		if code, err := status(client(roots, &foreign), e.path); err == nil {
			t.Errorf("%s with a certificate of another CA: %d, want the handshake refused", e.path, code)
		}
	}
	for _, p := range open {
		if code, err := status(client(roots, nil), p); err != nil || code != 200 {
			t.Errorf("%s without a client certificate: %d %v, want open", p, code, err)
		}
	}

	// The client CA rotates: the old client is refused, the new one in.
	newClientCA := newCA(t, "client-ca-2")
	writeFile(t, f.ClientCAFile, caPEM(newClientCA))
	fresh := newClientCA.issue(t, "prometheus-2", false)
	waitFor(t, "the rotated client CA", func() bool { code, err := status(client(roots, &fresh), "/tasks"); return err == nil && code == 200 })
	if _, err := status(client(roots, &good), "/tasks"); err == nil {
		t.Error("a certificate of the replaced CA still gets in")
	}
}

// TestTLSCertificateReload renews the server certificate on disk while
// the server runs: new connections get the new one.
func TestTLSCertificateReload(t *testing.T) {
	ca := newCA(t, "ca")
	dir := t.TempDir()
	f := TLSFiles{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	first := ca.issue(t, "first", true)
	c, k := pemOf(t, first)
	writeFile(t, f.CertFile, c)
	writeFile(t, f.KeyFile, k)
	url := tlsServer(t, authHandler(Auth{}), f)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	served := func() string {
		resp, err := client(roots, nil).Get(url + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("serves %q", cn)
	}
	// Mid-rotation the certificate is new and the key still old: the
	// server keeps the old pair rather than failing handshakes.
	second := ca.issue(t, "second", true)
	c2, k2 := pemOf(t, second)
	writeFile(t, f.CertFile, c2)
	if cn := served(); cn != "first" {
		t.Errorf("mid-rotation serves %q, want the old pair", cn)
	}
	writeFile(t, f.KeyFile, k2)
	waitFor(t, "the renewed certificate", func() bool { return served() == "second" })

	// Plain HTTP to the TLS port is refused, never answered in clear.
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("GET /tasks HTTP/1.0\r\n\r\n"))
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(conn).ReadString('\n')
	if strings.Contains(line, "200") {
		t.Errorf("plain HTTP answered: %q", line)
	}
}
