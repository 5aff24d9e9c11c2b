package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// AuthMode says how callers of the protected endpoints prove who they are.
type AuthMode string

const (
	// AuthNone lets anyone who reaches the port in.
	AuthNone AuthMode = "none"
	// AuthBearer wants "Authorization: Bearer <token>" with one of Tokens.
	AuthBearer AuthMode = "bearer"
	// AuthMTLS wants a client certificate the TLS handshake verified
	// (TLSConfig with a client CA).
	AuthMTLS AuthMode = "mtls"
)

// Auth guards every endpoint but the probes (/healthz, /readyz), the web
// view's page and script (/ui/, which hold no data and must load for the
// login field) and, unless ProtectMetrics, /metrics.
type Auth struct {
	Mode AuthMode
	// Tokens are the accepted bearer tokens (AuthBearer).
	Tokens *Tokens
	// ProtectMetrics puts /metrics behind the same check.
	ProtectMetrics bool
	// Denied, when set, learns each refusal's reason (no_credentials,
	// invalid_token, no_client_certificate).
	Denied func(reason string)
}

func (a Auth) on() bool { return a.Mode == AuthBearer || a.Mode == AuthMTLS }

// middleware refuses a request without valid credentials with 401.
func (a Auth) middleware(next http.Handler) http.Handler {
	if !a.on() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason, msg := a.check(r); reason != "" {
			if a.Denied != nil {
				a.Denied(reason)
			}
			if a.Mode == AuthBearer {
				errParam := ""
				if reason == "invalid_token" {
					errParam = `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="sidestream"`+errParam)
			}
			w.Header().Set("Cache-Control", "no-store")
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": msg, "auth": string(a.Mode), "reason": reason})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// check returns "" for a request with valid credentials, else the
// refusal's reason code and message.
func (a Auth) check(r *http.Request) (reason, msg string) {
	switch a.Mode {
	case AuthBearer:
		h := r.Header.Get("Authorization")
		scheme, tok, ok := strings.Cut(h, " ")
		if h == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
			return "no_credentials", "this endpoint needs a token: send Authorization: Bearer <token> with one of the tokens of api.token_file or SIDESTREAM_API_TOKENS"
		}
		if a.Tokens == nil || !a.Tokens.Valid(strings.TrimSpace(tok)) {
			return "invalid_token", "the token is not one of the accepted tokens"
		}
	case AuthMTLS:
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			return "no_client_certificate", "this endpoint needs a client certificate signed by api.tls.client_ca_file"
		}
	}
	return "", ""
}

// minTokenLen matches the topology's check: shorter tokens are refused.
const minTokenLen = 16

// ParseTokens reads a token file: one token a line, blank lines and
// lines starting with '#' ignored. It never quotes a token.
func ParseTokens(b []byte) ([]string, error) {
	var out []string
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if len(l) < minTokenLen {
			return nil, fmt.Errorf("the token on line %d is shorter than %d characters", i+1, minTokenLen)
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil, errors.New("no token in the file")
	}
	return out, nil
}

// Tokens is a set of bearer tokens: fixed ones (from the environment)
// and those of a file, read again whenever the file changes (its
// modification time, size or inode), so tokens rotate without a restart.
// A file that fails to read or holds no token keeps the tokens read last.
// Safe for concurrent use.
type Tokens struct {
	file   string
	fixed  [][sha256.Size]byte
	onErr  func(error)
	mu     sync.Mutex
	stamp  fileStamp
	loaded [][sha256.Size]byte
}

// NewTokens reads file (may be "") once; fixed are tokens that stay.
// onErr (may be nil) learns of a failed re-read.
func NewTokens(file string, fixed []string, onErr func(error)) (*Tokens, error) {
	t := &Tokens{file: file, onErr: onErr}
	for _, f := range fixed {
		t.fixed = append(t.fixed, sha256.Sum256([]byte(f)))
	}
	if file != "" {
		if err := t.reload(); err != nil {
			return nil, err
		}
	}
	if len(t.fixed)+len(t.loaded) == 0 {
		return nil, errors.New("no bearer token: give api.token_file or SIDESTREAM_API_TOKENS")
	}
	return t, nil
}

// reload reads the file when its stamp changed. Called with mu held, or
// before t is shared.
func (t *Tokens) reload() error {
	st, err := stampOf(t.file)
	if err == nil && st == t.stamp {
		return nil
	}
	t.stamp = st // a broken file is not read again until it changes
	if err != nil {
		return fmt.Errorf("token file %q: %w", t.file, err)
	}
	b, err := os.ReadFile(t.file)
	if err != nil {
		return fmt.Errorf("token file %q: %w", t.file, err)
	}
	toks, err := ParseTokens(b)
	if err != nil {
		return fmt.Errorf("token file %q: %w", t.file, err)
	}
	t.loaded = t.loaded[:0:0]
	for _, k := range toks {
		t.loaded = append(t.loaded, sha256.Sum256([]byte(k)))
	}
	return nil
}

// Valid reports whether tok is one of the tokens. Each token is compared
// as a SHA-256 digest in constant time, all of them every time, so
// neither the time nor the length of a token leaks.
func (t *Tokens) Valid(tok string) bool {
	h := sha256.Sum256([]byte(tok))
	t.mu.Lock()
	if t.file != "" {
		if err := t.reload(); err != nil && t.onErr != nil {
			t.onErr(err)
		}
	}
	keys := append(append([][sha256.Size]byte(nil), t.fixed...), t.loaded...)
	t.mu.Unlock()
	ok := 0
	for i := range keys {
		ok |= subtle.ConstantTimeCompare(h[:], keys[i][:])
	}
	return ok == 1 && tok != ""
}

// fileStamp tells a changed file from the one read last.
type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path) // follows the symbolic links of a Kubernetes Secret volume
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ino: inode(fi)}, nil
}
