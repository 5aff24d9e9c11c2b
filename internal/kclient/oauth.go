package kclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/sidestream/sidestream/internal/config"
)

// tokenTimeout bounds one token request: franz-go asks for the token on
// the connection's path, so a token endpoint that hangs must not hang
// the connection for long.
const tokenTimeout = 30 * time.Second

// TokenError is a token endpoint that gave no token. Its text names the
// endpoint, the HTTP status and the OAuth error code and description the
// endpoint sent, never the client secret or the raw answer (which an
// endpoint may fill with the request).
type TokenError struct {
	URL    string
	Status int    // 0 when no answer came
	Code   string // the OAuth "error" field, e.g. invalid_client
	Desc   string // its "error_description", truncated
	Err    error  // the transport error when Status is 0
}

func (e *TokenError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "OAUTHBEARER token from %s: ", e.URL)
	if e.Status == 0 {
		b.WriteString(e.Err.Error())
		return b.String()
	}
	fmt.Fprintf(&b, "HTTP %d %s", e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s", e.Code)
		if e.Desc != "" {
			b.WriteString(": " + e.Desc)
		}
		b.WriteString(")")
	}
	return b.String()
}

func (e *TokenError) Unwrap() error { return e.Err }

// oauthMechanism is OAUTHBEARER with a token of the client credentials
// grant. The token source keeps the token and asks the endpoint again
// only when it is within 10 s of its expiry (oauth2's expiry delta), so
// the many connections of the router's clients share one token. franz-go
// calls the function on every authentication, including the
// re-authentications of KIP-368 before the broker's session lifetime
// ends: a token refreshed here reaches every connection in time.
func oauthMechanism(o config.OAuth) sasl.Mechanism {
	cc := &clientcredentials.Config{
		ClientID:     o.ClientID,
		ClientSecret: o.ClientSecret.Reveal(),
		TokenURL:     o.TokenURL,
		Scopes:       o.Scopes,
	}
	hc := &http.Client{Timeout: tokenTimeout}
	ts := cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, hc))
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		tok, err := ts.Token()
		if err != nil {
			return oauth.Auth{}, tokenError(o.TokenURL, err)
		}
		if tok.AccessToken == "" {
			return oauth.Auth{}, &TokenError{URL: o.TokenURL, Err: errors.New("the answer holds no access_token")}
		}
		return oauth.Auth{Token: tok.AccessToken, Extensions: o.Extensions}, nil
	})
}

func tokenError(tokenURL string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil {
		desc := re.ErrorDescription
		if len(desc) > 200 {
			desc = desc[:200] + "..."
		}
		return &TokenError{URL: tokenURL, Status: re.Response.StatusCode, Code: re.ErrorCode, Desc: desc}
	}
	// A transport error names the URL, which the TokenError does: keep
	// its cause.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &TokenError{URL: tokenURL, Err: err}
}

// tokenHint is ConnHint for a TokenError.
func tokenHint(e *TokenError) string {
	switch {
	case e.Status >= 500:
		return "the token endpoint failed (a server error); the brokers were not asked: retrying"
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Code == "invalid_client" || e.Code == "unauthorized_client":
		return fmt.Sprintf("authentication failed: the token endpoint refused the client credentials; check security.sasl.oauth.client_id and %s", config.EnvSASLOAuthClientSecret)
	case e.Code == "invalid_scope":
		return "authentication failed: the token endpoint refused the scopes; check security.sasl.oauth.scopes"
	case e.Status != 0:
		return "the token endpoint refused the request; check security.sasl.oauth.token_url"
	}
	return "the token endpoint is unreachable; check security.sasl.oauth.token_url and the network to it"
}
