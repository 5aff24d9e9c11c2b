package kclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/sidestream/sidestream/internal/config"
)

const mskHost = "b-1.orders.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"

// isolateAWS empties every source of the AWS chain this machine could
// offer, so a test sees only what it sets. The instance metadata
// service, the chain's last resort, is pointed at a closed local port:
// no test request leaves the machine.
func isolateAWS(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
		"AWS_EC2_METADATA_DISABLED", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", closed)
}

// signedAuth runs one AWS_MSK_IAM authentication against host and
// returns the signed request the mechanism would send.
func signedAuth(t *testing.T, m sasl.Mechanism, host string) (map[string]string, error) {
	t.Helper()
	_, msg, err := m.Authenticate(context.Background(), host)
	if err != nil {
		return nil, err
	}
	var signed map[string]string
	if err := json.Unmarshal(msg, &signed); err != nil {
		t.Fatalf("%v: %s", err, msg)
	}
	return signed, nil
}

func accessKey(signed map[string]string) string {
	k, _, _ := strings.Cut(signed["x-amz-credential"], "/")
	return k
}

func TestMSKIAMEnvironment(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-s3cret-51f0")
	t.Setenv("AWS_SESSION_TOKEN", "sess-tok-1")
	m, err := awsMechanism(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "AWS_MSK_IAM" {
		t.Fatalf("mechanism %s", m.Name())
	}
	_, msg, err := m.Authenticate(context.Background(), mskHost)
	if err != nil {
		t.Fatal(err)
	}
	var signed map[string]string
	if err := json.Unmarshal(msg, &signed); err != nil {
		t.Fatalf("%v: %s", err, msg)
	}
	if c := signed["x-amz-credential"]; !strings.HasPrefix(c, "AKIAEXAMPLE/") || !strings.Contains(c, "/eu-west-1/kafka-cluster/") {
		t.Errorf("credential %q: want the access key and the broker's region", c)
	}
	if signed["x-amz-security-token"] != "sess-tok-1" || signed["action"] != "kafka-cluster:Connect" || signed["user-agent"] != "sidestream" {
		t.Errorf("signed request %v", signed)
	}
	if strings.Contains(string(msg), "aws-s3cret-51f0") {
		t.Error("the secret key is sent")
	}
	sec := config.Security{Protocol: config.ProtocolSASLSSL, SASL: config.SASL{Mechanism: config.SASLAWSMSKIAM}}
	if opts, err := SecurityOpts(sec); err != nil || len(opts) != 2 {
		t.Errorf("SecurityOpts: %d options, %v", len(opts), err)
	}
}

func TestMSKIAMSharedFile(t *testing.T) {
	isolateAWS(t)
	creds := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = d\n\n[orders]\naws_access_key_id = AKIAORDERS\naws_secret_access_key = o\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for profile, want := range map[string]string{"": "AKIADEFAULT", "orders": "AKIAORDERS"} {
		t.Setenv("AWS_PROFILE", profile)
		m, err := awsMechanism(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		signed, err := signedAuth(t, m, mskHost)
		if err != nil || accessKey(signed) != want {
			t.Errorf("profile %q: key %q, %v; want %s", profile, accessKey(signed), err, want)
		}
	}
	t.Setenv("AWS_PROFILE", "missing")
	if _, err := awsMechanism(context.Background()); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a profile that is not there: %v", err)
	}
}

// credsEndpoint is the container credentials API of ECS and EKS Pod
// Identity (AWS_CONTAINER_CREDENTIALS_FULL_URI with
// AWS_CONTAINER_AUTHORIZATION_TOKEN): each request it answers issues the
// next key, valid for ttl.
type credsEndpoint struct {
	token  string
	ttl    time.Duration
	status int // non-zero: fail with it
	mu     sync.Mutex
	issued int
	bad    []string
}

func (e *credsEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if got := r.Header.Get("Authorization"); got != e.token {
		e.bad = append(e.bad, fmt.Sprintf("Authorization %q", got))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if e.status != 0 {
		w.WriteHeader(e.status)
		_, _ = w.Write([]byte(`{"code":"Failure","message":"the agent is down"}`))
		return
	}
	e.issued++
	_ = json.NewEncoder(w).Encode(map[string]string{
		"AccessKeyId":     fmt.Sprintf("ASIAROTATED%d", e.issued),
		"SecretAccessKey": fmt.Sprintf("secret-%d", e.issued),
		"Token":           fmt.Sprintf("session-%d", e.issued),
		"Expiration":      time.Now().Add(e.ttl).UTC().Format(time.RFC3339),
	})
}

func (e *credsEndpoint) count() (int, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.issued, e.bad
}

// serveCreds starts e on 127.0.0.1 and points the chain at it.
func serveCreds(t *testing.T, e *credsEndpoint) {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/v1/credentials")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", e.token)
}

// TestMSKIAMContainerRotation: credentials of a container endpoint are
// fetched once, kept while they hold, and fetched again awsRefreshBefore
// their expiry, by the same mechanism: a rotation reaches the next
// authentication without a new client.
func TestMSKIAMContainerRotation(t *testing.T) {
	isolateAWS(t)
	// Each key expires 2 s after the cache takes it for stale.
	e := &credsEndpoint{token: "pod-identity-tok", ttl: awsRefreshBefore + 2*time.Second}
	serveCreds(t, e)
	m, err := awsMechanism(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := e.count(); n != 0 {
		t.Fatalf("%d keys fetched before the first authentication", n)
	}
	for i := range 3 {
		signed, err := signedAuth(t, m, mskHost)
		if err != nil {
			t.Fatal(err)
		}
		if k := accessKey(signed); k != "ASIAROTATED1" || signed["x-amz-security-token"] != "session-1" {
			t.Fatalf("authentication %d: key %s token %s, want the first key while it holds", i, k, signed["x-amz-security-token"])
		}
	}
	if n, bad := e.count(); n != 1 || len(bad) > 0 {
		t.Fatalf("%d keys fetched for 3 authentications (want 1, cached), problems %v", n, bad)
	}
	// Across the refresh point: the same mechanism signs with the next key.
	deadline := time.Now().Add(30 * time.Second)
	for {
		signed, err := signedAuth(t, m, mskHost)
		if err != nil {
			t.Fatal(err)
		}
		if k := accessKey(signed); k != "ASIAROTATED1" {
			if k != "ASIAROTATED2" || signed["x-amz-security-token"] != "session-2" {
				t.Fatalf("after the refresh: key %s token %s, want the second key", k, signed["x-amz-security-token"])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first key is still used 30 s after it went stale")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n, _ := e.count(); n != 2 {
		t.Errorf("%d keys fetched, want 2", n)
	}
}

func TestMSKIAMNoCredentials(t *testing.T) {
	isolateAWS(t)
	sec := config.Security{Protocol: config.ProtocolSASLSSL, SASL: config.SASL{Mechanism: config.SASLAWSMSKIAM}}
	m, err := mechanism(sec.SASL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = signedAuth(t, m, mskHost)
	if !errors.Is(err, ErrNoAWSCredentials) {
		t.Fatalf("error %v, want ErrNoAWSCredentials", err)
	}
	for _, want := range []string{"AWS_ACCESS_KEY_ID", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "instance profile"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if h := ConnHint(err, sec); !strings.Contains(h, "no AWS credentials in any source") {
		t.Errorf("hint %q", h)
	}

	// A source that is there but fails is not "none found".
	e := &credsEndpoint{token: "tok", status: http.StatusInternalServerError}
	serveCreds(t, e)
	m, err = mechanism(sec.SASL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = signedAuth(t, m, mskHost)
	var ce *AWSCredentialsError
	if !errors.As(err, &ce) || errors.Is(err, ErrNoAWSCredentials) {
		t.Fatalf("error %v (%T), want an AWSCredentialsError", err, err)
	}
	if h := ConnHint(err, sec); !strings.Contains(h, "retrying") {
		t.Errorf("hint %q", h)
	}
}

// mskBroker makes a kfake cluster answer AWS_MSK_IAM as MSK does, with a
// session lifetime (KIP-368) so short that franz-go authenticates its
// connections again every second or so. kfake has no AWS_MSK_IAM: the
// handshake and the authentication are answered by controls. Each
// authentication's access key is recorded; one whose session token is
// not the key's is refused.
type mskBroker struct {
	mu   sync.Mutex
	keys []string
}

func (b *mskBroker) install(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.SASLHandshake), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.SASLHandshakeRequest)
		resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
		if r.Mechanism != "AWS_MSK_IAM" {
			resp.ErrorCode = 33 // UNSUPPORTED_SASL_MECHANISM
		}
		resp.SupportedMechanisms = []string{"AWS_MSK_IAM"}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.SASLAuthenticateRequest)
		resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		var signed map[string]string
		_ = json.Unmarshal(r.SASLAuthBytes, &signed)
		k := accessKey(signed)
		n := strings.TrimPrefix(k, "ASIAROTATED")
		if k == "" || signed["x-amz-security-token"] != "session-"+n || signed["action"] != "kafka-cluster:Connect" {
			resp.ErrorCode = 58 // SASL_AUTHENTICATION_FAILED
			return resp, nil, true
		}
		b.mu.Lock()
		b.keys = append(b.keys, k)
		b.mu.Unlock()
		resp.SASLAuthBytes = []byte(`{"version":"2020_10_22","request-id":"1"}`)
		resp.SessionLifetimeMillis = 2000
		return resp, nil, true
	})
}

func (b *mskBroker) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.keys...)
}

// TestMSKIAMReauthenticatesWithRotatedKeys: one client, never rebuilt,
// against a broker that asks for re-authentication every ~2 s, while
// the container endpoint's keys go stale every 2 s: the broker sees the
// later keys on the same client's re-authentications.
func TestMSKIAMReauthenticatesWithRotatedKeys(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_REGION", "eu-west-1") // 127.0.0.1 names no region
	e := &credsEndpoint{token: "pod-identity-tok", ttl: awsRefreshBefore + 2*time.Second}
	serveCreds(t, e)
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := &mskBroker{}
	b.install(c)
	sec := config.Security{Protocol: config.ProtocolSASLPlaintext, SASL: config.SASL{Mechanism: config.SASLAWSMSKIAM}}
	opts, err := SecurityOpts(sec)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(c.ListenAddrs()...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("ping: %v (keys seen %v)", err, b.seen())
		}
		keys := b.seen()
		if slices.Contains(keys, "ASIAROTATED3") {
			if keys[0] != "ASIAROTATED1" {
				t.Errorf("first authentication with %s, want ASIAROTATED1", keys[0])
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after 60 s the broker saw keys %v, want the third key", keys)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMSKIAMWebIdentity: IRSA's environment (a web identity token file
// and a role) makes the chain ask STS's AssumeRoleWithWebIdentity, here
// a local STS (AWS_ENDPOINT_URL_STS), with the token of the file.
func TestMSKIAMWebIdentity(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_REGION", "eu-west-1")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("projected-sa-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		asked = append(asked, r.Form.Get("Action")+" "+r.Form.Get("RoleArn")+" "+r.Form.Get("WebIdentityToken"))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIAIRSA</AccessKeyId><SecretAccessKey>irsa-secret</SecretAccessKey>
<SessionToken>irsa-session</SessionToken><Expiration>%s</Expiration></Credentials></AssumeRoleWithWebIdentityResult>
<ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	defer sts.Close()
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile)
	t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::111122223333:role/sidestream")
	m, err := awsMechanism(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	signed, err := signedAuth(t, m, mskHost)
	if err != nil {
		t.Fatal(err)
	}
	if accessKey(signed) != "ASIAIRSA" || signed["x-amz-security-token"] != "irsa-session" {
		t.Errorf("signed with %s / %s, want the role's credentials", accessKey(signed), signed["x-amz-security-token"])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0] != "AssumeRoleWithWebIdentity arn:aws:iam::111122223333:role/sidestream projected-sa-token" {
		t.Errorf("STS asked %q", asked)
	}
}
