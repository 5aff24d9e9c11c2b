package kclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sidestream/sidestream/internal/config"
)

const (
	oauthID     = "sidestream-router"
	oauthSecret = "cl1ent-s3cret-9d2e"
)

// tokenEndpoint is an OAuth 2 token endpoint of the client credentials
// grant that checks each request and counts the tokens it issues.
type tokenEndpoint struct {
	t         *testing.T
	expiresIn int
	status    int // non-zero: answer this with an OAuth error
	mu        sync.Mutex
	issued    int
	problems  []string
}

func (e *tokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	bad := func(format string, args ...any) { e.problems = append(e.problems, fmt.Sprintf(format, args...)) }
	if r.Method != http.MethodPost {
		bad("method %s, want POST", r.Method)
	}
	if err := r.ParseForm(); err != nil {
		bad("form: %v", err)
	}
	if g := r.PostForm.Get("grant_type"); g != "client_credentials" {
		bad("grant_type %q, want client_credentials", g)
	}
	if s := r.PostForm.Get("scope"); s != "kafka.read kafka.write" {
		bad("scope %q, want the two scopes space-separated", s)
	}
	if id, secret, ok := r.BasicAuth(); !ok || id != oauthID || secret != oauthSecret {
		bad("basic auth %v %q, want the client id and secret", ok, id)
	}
	w.Header().Set("Content-Type", "application/json")
	if e.status != 0 {
		code := "invalid_client"
		if e.status >= 500 {
			code = "server_error"
		}
		w.WriteHeader(e.status)
		// An endpoint that echoes the request: the secret must still
		// not reach the error.
		json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": "no token for you",
			"echo": r.Header.Get("Authorization") + " " + oauthSecret})
		return
	}
	e.issued++
	json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("token-%d", e.issued), "token_type": "Bearer", "expires_in": e.expiresIn})
}

func (e *tokenEndpoint) count() (int, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.issued, append([]string(nil), e.problems...)
}

func oauthSec(url string) config.Security {
	return config.Security{Protocol: config.ProtocolSASLSSL, SASL: config.SASL{
		Mechanism: config.SASLOAuthBearer,
		OAuth: config.OAuth{TokenURL: url, ClientID: oauthID, ClientSecret: oauthSecret,
			Scopes: []string{"kafka.read", "kafka.write"}, Extensions: map[string]string{"logicalCluster": "lkc-1"}},
	}}
}

// authMessage runs the mechanism's first step, as franz-go does on each
// (re)authentication, and returns the client's message.
func authMessage(t *testing.T, sec config.Security) (string, error) {
	t.Helper()
	m, err := mechanism(sec.SASL)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != config.SASLOAuthBearer {
		t.Fatalf("mechanism %s", m.Name())
	}
	_, msg, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
	return string(msg), err
}

func TestOAuthTokenSource(t *testing.T) {
	t.Run("cached while valid", func(t *testing.T) {
		ep := &tokenEndpoint{t: t, expiresIn: 3600}
		srv := httptest.NewServer(ep)
		defer srv.Close()
		sec := oauthSec(srv.URL)
		m, err := mechanism(sec.SASL)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			_, msg, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
			if err != nil {
				t.Fatalf("authenticate %d: %v", i, err)
			}
			// RFC 7628: gs2 header, then auth=Bearer TOKEN and the
			// extensions, each ended by \x01.
			if want := "n,,\x01auth=Bearer token-1\x01logicalCluster=lkc-1\x01\x01"; string(msg) != want {
				t.Errorf("authenticate %d: message %q, want %q", i, msg, want)
			}
		}
		n, problems := ep.count()
		if n != 1 || len(problems) > 0 {
			t.Errorf("%d tokens issued for 3 authentications (want 1: cached); request problems: %v", n, problems)
		}
	})
	t.Run("refreshed when expiring", func(t *testing.T) {
		// expires_in 5 is inside oauth2's 10 s expiry delta: every token
		// is already due for refresh, so each authentication asks anew.
		ep := &tokenEndpoint{t: t, expiresIn: 5}
		srv := httptest.NewServer(ep)
		defer srv.Close()
		m, err := mechanism(oauthSec(srv.URL).SASL)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			_, msg, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("auth=Bearer token-%d\x01", i); !strings.Contains(string(msg), want) {
				t.Errorf("authentication %d sent %q, want a fresh token (%q)", i, msg, want)
			}
		}
		if n, problems := ep.count(); n != 3 || len(problems) > 0 {
			t.Errorf("%d tokens issued, want 3; request problems: %v", n, problems)
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			status int
			code   string
			hint   []string
		}{
			{http.StatusUnauthorized, "invalid_client", []string{"refused the client credentials", "security.sasl.oauth.client_id", config.EnvSASLOAuthClientSecret}},
			{http.StatusInternalServerError, "server_error", []string{"token endpoint failed", "retrying"}},
		} {
			ep := &tokenEndpoint{t: t, status: tc.status}
			srv := httptest.NewServer(ep)
			sec := oauthSec(srv.URL)
			_, err := authMessage(t, sec)
			srv.Close()
			var te *TokenError
			if !errors.As(err, &te) || te.Status != tc.status {
				t.Fatalf("HTTP %d: error %v (%T), want a TokenError with the status", tc.status, err, err)
			}
			text := WithHint(err, sec)
			for _, w := range append([]string{srv.URL, fmt.Sprint(tc.status), tc.code}, tc.hint...) {
				if !strings.Contains(text, w) {
					t.Errorf("HTTP %d: %q does not say %q", tc.status, text, w)
				}
			}
			if strings.Contains(text, oauthSecret) || strings.Contains(fmt.Sprintf("%+v %#v", err, sec), oauthSecret) {
				t.Errorf("HTTP %d: the client secret is printed: %s", tc.status, text)
			}
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String() + "/token"
		ln.Close()
		sec := oauthSec(url)
		_, err = authMessage(t, sec)
		if h := ConnHint(err, sec); err == nil || !strings.Contains(h, "unreachable") || !strings.Contains(err.Error(), url) {
			t.Errorf("error %v, hint %q: want the URL named and unreachable", err, h)
		}
	})
	t.Run("client options", func(t *testing.T) {
		sec := oauthSec("https://idp.example.com/token")
		sec.TLS = config.TLS{}
		opts, err := SecurityOpts(sec)
		if err != nil || len(opts) != 2 { // TLS dialer + SASL
			t.Errorf("SecurityOpts: %d options, %v", len(opts), err)
		}
		sec.SASL.OAuth.ClientSecret = ""
		if _, err := SecurityOpts(sec); err == nil || !strings.Contains(err.Error(), config.EnvSASLOAuthClientSecret) {
			t.Errorf("SecurityOpts without a secret: %v", err)
		}
	})
}
