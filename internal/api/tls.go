package api

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
)

// TLSFiles are the PEM files of the API's TLS: its certificate and key,
// and (for AuthMTLS) the CA of the client certificates.
type TLSFiles struct {
	CertFile, KeyFile, ClientCAFile string
}

// TLSConfig returns a server tls.Config that reads the files again when
// they change (cert-manager renews a certificate by rewriting its
// Secret): the certificate at the next handshake, through
// GetCertificate; the client CA through GetConfigForClient. A file that
// fails to load keeps what was loaded last, and onErr (may be nil) learns
// why. With a client CA, a client certificate is verified when given
// (one from another CA fails the handshake) and required by Auth for
// every endpoint but the probes, which kubelet calls without one.
func TLSConfig(f TLSFiles, onErr func(error)) (*tls.Config, error) {
	if onErr == nil {
		onErr = func(error) {}
	}
	kp := &keyPair{cert: f.CertFile, key: f.KeyFile}
	if err := kp.reload(); err != nil {
		return nil, err
	}
	base := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return kp.get(onErr), nil
		},
	}
	if f.ClientCAFile == "" {
		return base, nil
	}
	ca := &caPool{file: f.ClientCAFile}
	if err := ca.reload(); err != nil {
		return nil, err
	}
	base.ClientAuth = tls.VerifyClientCertIfGiven
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		c.GetConfigForClient = nil
		c.ClientCAs = ca.get(onErr)
		return c, nil
	}
	return base, nil
}

// keyPair is a certificate and key read again when either file changes.
type keyPair struct {
	cert, key string
	mu        sync.Mutex
	cst, kst  fileStamp
	cur       *tls.Certificate
}

func (k *keyPair) reload() error {
	cst, err1 := stampOf(k.cert)
	kst, err2 := stampOf(k.key)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("API certificate: %w", err)
	}
	if k.cur != nil && cst == k.cst && kst == k.kst {
		return nil
	}
	c, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		// Mid-rotation the certificate may be new and the key still old:
		// retried at the next handshake, since the stamps stay unset.
		return fmt.Errorf("API certificate %q and key %q: %w", k.cert, k.key, err)
	}
	k.cur, k.cst, k.kst = &c, cst, kst
	return nil
}

func (k *keyPair) get(onErr func(error)) *tls.Certificate {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.reload(); err != nil {
		onErr(err)
	}
	return k.cur
}

// caPool is a CA file read again when it changes.
type caPool struct {
	file string
	mu   sync.Mutex
	st   fileStamp
	pool *x509.CertPool
}

func (c *caPool) reload() error {
	st, err := stampOf(c.file)
	if err != nil {
		return fmt.Errorf("API client CA: %w", err)
	}
	if c.pool != nil && st == c.st {
		return nil
	}
	b, err := os.ReadFile(c.file)
	if err != nil {
		return fmt.Errorf("API client CA: %w", err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		return fmt.Errorf("API client CA %q holds no PEM certificate", c.file)
	}
	c.pool, c.st = p, st
	return nil
}

func (c *caPool) get(onErr func(error)) *x509.CertPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.reload(); err != nil {
		onErr(err)
	}
	return c.pool
}
