package itest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const (
	oauthClientID     = "sidestream-router"
	oauthClientSecret = "oauth-s3cret-c41d9e"
	// oauthTokenLife is the lifetime of the tokens the test endpoint
	// issues, and oauthReauthMs the broker's connections.max.reauth.ms
	// for OAUTHBEARER: connections re-authenticate every ~15 s and each
	// token is due for refresh 10 s before its exp (oauth2's delta), so a
	// run of a minute sees several tokens on the same connections.
	oauthTokenLife = 20 * time.Second
	oauthReauthMs  = "15000"
)

// unsecuredJWS is a token Kafka's default OAUTHBEARER validator accepts:
// alg "none", a subject, iat and exp, and an empty signature.
func unsecuredJWS(sub string, life time.Duration) string {
	enc := base64.RawURLEncoding.EncodeToString
	now := time.Now()
	payload, _ := json.Marshal(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(life).Unix()})
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(payload) + "."
}

// oauthEndpoint is a token endpoint of the client credentials grant
// issuing unsecured JWS tokens, or refusing every request.
type oauthEndpoint struct {
	*httptest.Server
	issued  atomic.Int64
	refused atomic.Int64
}

func startOAuthEndpoint(t *testing.T, refuse bool) *oauthEndpoint {
	t.Helper()
	e := &oauthEndpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		if refuse || !ok || id != oauthClientID || secret != oauthClientSecret || r.FormValue("grant_type") != "client_credentials" {
			e.refused.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client","error_description":"unknown client"}`)
			return
		}
		e.issued.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"access_token": unsecuredJWS(saslUser, oauthTokenLife),
			"token_type": "Bearer", "expires_in": int(oauthTokenLife.Seconds())})
	}))
	t.Cleanup(e.Close)
	return e
}

func oauthTopology(url string) string {
	return "security:\n  protocol: sasl_plaintext\n  sasl:\n    mechanism: OAUTHBEARER\n    oauth:\n      token_url: " + url + "\n      client_id: " + oauthClientID + "\n"
}

// oauthBearer: the router authenticates with OAUTHBEARER tokens from a
// local token endpoint against the broker's unsecured-JWS listener,
// records flow exactly once, and the connections re-authenticate with
// fresh tokens as the old ones expire; then a token endpoint that
// refuses makes /readyz say why.
func oauthBearer(t *testing.T, b *secureBroker) {
	t.Run("flow", func(t *testing.T) {
		ep := startOAuthEndpoint(t, false)
		s := newSecureScenario(t, b, "security_oauthbearer", 3000)
		s.appendTopology(oauthTopology(ep.URL + "/oauth2/token"))
		// Half the records, then several token lifetimes, then the other
		// half: the broker ends a session at its token's exp at the
		// latest, so the second half flows only over connections that
		// re-authenticated with fresh tokens.
		half := len(s.events) / 2
		p1 := s.startProducerRange(0, half, 0)
		r := s.startRouterEnv("x", b.sasl, []string{"SIDESTREAM_SASL_OAUTH_CLIENT_SECRET=" + oauthClientSecret}, fastGroup...)
		r.waitReady(60 * time.Second)
		p1.wait(t, time.Minute)
		s.waitProgress(p1, int64(half)-1, 90*time.Second, r)
		first := ep.issued.Load()
		waitFor(t, 3*time.Minute, "tokens refreshed for re-authentication", func() (bool, string) {
			if r.exited() {
				t.Fatalf("router exited: %s\n%s", r.cmd.ProcessState, tail(r.logPath, 20))
			}
			n := ep.issued.Load()
			return n >= first+3, fmt.Sprintf("%d tokens issued (%d after the first half)", n, first)
		})
		p2 := s.startProducerRange(half, len(s.events), 0)
		s.waitCaughtUp(p2, 90*time.Second, r)
		if code, body := r.readyz(); code != http.StatusOK {
			t.Errorf("/readyz %d after the tokens expired: %s", code, body)
		}
		if n := ep.refused.Load(); n != 0 {
			t.Errorf("the token endpoint refused %d requests", n)
		}
		noSecrets(t, r, oauthClientSecret)
		r.stop(40 * time.Second)
		tl := s.tally(s.readBack(true, time.Minute))
		s.requireExactlyOnce(tl)
		s.report(tl, "protocol=sasl_plaintext", "mechanism=OAUTHBEARER", fmt.Sprintf("tokens_issued=%d", ep.issued.Load()))
	})
	t.Run("token_refused", func(t *testing.T) {
		ep := startOAuthEndpoint(t, true)
		s := newSecureScenario(t, b, "security_oauth_refused", 10)
		s.appendTopology(oauthTopology(ep.URL + "/oauth2/token"))
		r := s.startRouterEnv("x", b.sasl, []string{"SIDESTREAM_SASL_OAUTH_CLIENT_SECRET=" + oauthClientSecret}, "--log-level", "debug")
		var reason string
		waitFor(t, 90*time.Second, "/readyz naming the refused token request", func() (bool, string) {
			if r.exited() {
				t.Fatalf("router exited: %s\n%s", r.cmd.ProcessState, tail(r.logPath, 20))
			}
			code, body := r.readyz()
			if code == http.StatusOK {
				t.Fatalf("ready without a token: %s", body)
			}
			reason = body
			return code == http.StatusServiceUnavailable && strings.Contains(body, "HTTP 401"), fmt.Sprintf("%d %s", code, body)
		})
		for _, want := range []string{ep.URL, "invalid_client", "refused the client credentials", "SIDESTREAM_SASL_OAUTH_CLIENT_SECRET"} {
			if !strings.Contains(reason, want) {
				t.Errorf("/readyz reason does not say %q: %s", want, reason)
			}
		}
		t.Logf("/readyz: %s", reason)
		noSecrets(t, r, oauthClientSecret)
		r.stop(20 * time.Second)
		noSecrets(t, r, oauthClientSecret)
	})
}
