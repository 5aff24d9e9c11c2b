package itest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/readback"
)

// The SASL users of the secure broker. The passwords are distinctive so
// that a leak into a log or an API answer is found by a plain search.
const (
	saslUser     = "alice"
	saslPassword = "alice-s3cret-7f3a9c"
	wrongPass    = "not-alices-pw-e41b07"
	tlsName      = "broker.sidestream.test" // the only name in the broker's certificate
)

// secureBroker is a broker of this test alone, started by scripts/kafka.sh
// in its secure mode: PLAINTEXT (setup, read-back), SASL_PLAINTEXT with
// PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and SSL requiring a client
// certificate, each on its own loopback port.
type secureBroker struct {
	dir       string   // data dir
	plaintext []string // setup and oracle read-back
	sasl      []string
	ssl       []string
	tls       string // dir of ca.pem, client.pem, client-key.pem
}

// secureDirPrefix names the data dirs of secure brokers, so that one left
// by a killed test run can be found and stopped by the next.
const secureDirPrefix = "sidestream-kafka-secure-"

// TestSecurity runs `router run` over SCRAM-SHA-256, SCRAM-SHA-512, PLAIN
// and TLS (CA, client certificate, server name) against a real Kafka with
// secure listeners, started here with certificates generated here, and
// checks each output read_committed against the oracle; then it checks a
// wrong password fails clearly without spinning, and that no password
// reaches a log or /topology.
func TestSecurity(t *testing.T) {
	if os.Getenv(envBrokers) == "" {
		t.Skipf("%s is not set: no real broker (scripts/kafka.sh up)", envBrokers)
	}
	start := time.Now()
	b := startSecureBroker(t)
	t.Logf("secure broker up in %s: plaintext %s, sasl_plaintext %s, ssl %s",
		time.Since(start).Round(100*time.Millisecond), b.plaintext[0], b.sasl[0], b.ssl[0])

	cases := []struct {
		name string
		// yaml is appended to the topology; env is the router's
		// security environment.
		yaml string
		env  []string
		ssl  bool
	}{
		{
			// Everything from the environment, as the Helm chart's
			// kafka.existingSecret gives it.
			name: "scram_sha_256",
			env: []string{"SIDESTREAM_SECURITY_PROTOCOL=sasl_plaintext", "SIDESTREAM_SASL_MECHANISM=SCRAM-SHA-256",
				"SIDESTREAM_SASL_USERNAME=" + saslUser, "SIDESTREAM_SASL_PASSWORD=" + saslPassword},
		},
		{
			name: "scram_sha_512",
			yaml: "security:\n  protocol: sasl_plaintext\n  sasl:\n    mechanism: SCRAM-SHA-512\n",
			env:  []string{"SIDESTREAM_SASL_USERNAME=" + saslUser, "SIDESTREAM_SASL_PASSWORD=" + saslPassword},
		},
		{
			name: "plain",
			yaml: "security:\n  protocol: sasl_plaintext\n  sasl:\n    mechanism: PLAIN\n    username: " + saslUser + "\n",
			env:  []string{"SIDESTREAM_SASL_PASSWORD=" + saslPassword},
		},
		{
			// Relative paths: resolved against the topology file.
			name: "tls",
			yaml: "security:\n  protocol: ssl\n  tls:\n    ca_file: tls/ca.pem\n    cert_file: tls/client.pem\n    key_file: tls/client-key.pem\n    server_name: " + tlsName + "\n",
			ssl:  true,
		},
	}
	t.Run("flow", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				s := newSecureScenario(t, b, "security_"+tc.name, 3000)
				brokers := b.sasl
				if tc.ssl {
					brokers = b.ssl
					copyDir(t, b.tls, filepath.Join(s.dir, "tls"))
				}
				s.appendTopology(tc.yaml)
				p := s.startProducer(0)
				r := s.startRouterEnv("x", brokers, tc.env, fastGroup...)
				r.waitReady(60 * time.Second)
				s.waitCaughtUp(p, 90*time.Second, r)
				noSecrets(t, r, saslPassword)
				r.stop(40 * time.Second)
				tl := s.tally(s.readBack(true, time.Minute))
				s.requireExactlyOnce(tl)

				// The same outputs read back through the secure listener,
				// with the options the router's clients use.
				cfg, err := config.LoadFile(s.config)
				if err != nil {
					t.Fatal(err)
				}
				if err := cfg.Apply(config.OverridesFromEnv(envLookup(tc.env))); err != nil {
					t.Fatal(err)
				}
				opts, err := kclient.SecurityOpts(cfg.Security)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				recs, err := readback.ReadCommittedWith(ctx, brokers, opts, s.outputs...)
				if err != nil {
					t.Fatalf("read back over %s: %v", cfg.Security.Protocol, err)
				}
				if len(recs) != tl.records {
					t.Errorf("read back over %s: %d records, over plaintext %d", cfg.Security.Protocol, len(recs), tl.records)
				}
				s.report(tl, "protocol="+cfg.Security.Protocol, "mechanism="+cfg.Security.SASL.Mechanism,
					fmt.Sprintf("secure_read_back=%d", len(recs)))
			})
		}
	})

	t.Run("wrong_password", func(t *testing.T) {
		s := newSecureScenario(t, b, "security_wrong_password", 10)
		s.appendTopology("security:\n  protocol: sasl_plaintext\n  sasl:\n    mechanism: SCRAM-SHA-512\n    username: " + saslUser + "\n")
		r := s.startRouterEnv("x", b.sasl, []string{"SIDESTREAM_SASL_PASSWORD=" + wrongPass}, "--log-level", "debug")
		var reason string
		waitFor(t, 90*time.Second, "/readyz naming the authentication failure", func() (bool, string) {
			if r.exited() {
				t.Fatalf("router exited: %s\n%s", r.cmd.ProcessState, tail(r.logPath, 20))
			}
			code, body := r.readyz()
			if code == http.StatusOK {
				t.Fatalf("ready with a wrong password: %s", body)
			}
			reason = body
			return code == http.StatusServiceUnavailable && strings.Contains(body, "SASL_AUTHENTICATION_FAILED"), fmt.Sprintf("%d %s", code, body)
		})
		if !strings.Contains(reason, "authentication failed") || !strings.Contains(reason, "SCRAM-SHA-512") {
			t.Errorf("/readyz reason does not say what to check: %s", reason)
		}
		t.Logf("/readyz: %s", reason)

		// Not a hot loop: over 8 s the retries back off and the process
		// stays nearly idle. A fixed window on purpose: a slower machine
		// only retries less and the bounds hold.
		cpu0, logs0 := cpuTime(t, r.cmd.Process.Pid), len(r.logLines(0, "brokers unreachable"))
		time.Sleep(8 * time.Second)
		cpu1, logs1 := cpuTime(t, r.cmd.Process.Pid), len(r.logLines(0, "brokers unreachable"))
		if r.exited() {
			t.Fatalf("router exited: %s", r.cmd.ProcessState)
		}
		if code, _ := r.readyz(); code != http.StatusServiceUnavailable {
			t.Errorf("/readyz %d with a wrong password, want 503", code)
		}
		retries, cpu := logs1-logs0, cpu1-cpu0
		if retries > 8 || cpu > 2*time.Second {
			t.Errorf("over 8s: %d connection retries and %s of CPU; want a backoff (at most 8) and an idle process", retries, cpu)
		}
		noSecrets(t, r, wrongPass)
		r.stop(20 * time.Second)
		noSecrets(t, r, wrongPass)
		fmt.Printf("scenario=security_wrong_password retries_in_8s=%d cpu_in_8s=%s reason=%q\n", retries, cpu, reason)
	})

	t.Run("acl_denied", func(t *testing.T) { aclDenied(t, b) })

	t.Run("oauthbearer", func(t *testing.T) { oauthBearer(t, b) })

	t.Run("tls_misconfigured", func(t *testing.T) {
		// In process, with the options the router builds: the hints name
		// the setting to fix.
		for _, tc := range []struct {
			name string
			tls  config.TLS
			want string
		}{
			{"no server name", config.TLS{CAFile: b.tls + "/ca.pem", CertFile: b.tls + "/client.pem", KeyFile: b.tls + "/client-key.pem"}, "security.tls.server_name"},
			{"no CA", config.TLS{CertFile: b.tls + "/client.pem", KeyFile: b.tls + "/client-key.pem", ServerName: tlsName}, "security.tls.ca_file"},
		} {
			sec := config.Security{Protocol: config.ProtocolSSL, TLS: tc.tls}
			err := metadataErr(t, b.ssl, sec)
			if err == nil {
				t.Errorf("%s: connected", tc.name)
				continue
			}
			if h := kclient.ConnHint(err, sec); !strings.Contains(h, tc.want) {
				t.Errorf("%s: %v: hint %q does not name %s", tc.name, err, h, tc.want)
			}
		}
		// The right settings connect.
		sec := config.Security{Protocol: config.ProtocolSSL, TLS: config.TLS{CAFile: b.tls + "/ca.pem",
			CertFile: b.tls + "/client.pem", KeyFile: b.tls + "/client-key.pem", ServerName: tlsName}}
		if err := metadataErr(t, b.ssl, sec); err != nil {
			t.Errorf("TLS with CA, client certificate and server name: %v", err)
		}
	})
}

// metadataErr asks the brokers for metadata with the security settings.
func metadataErr(t *testing.T, brokers []string, sec config.Security) error {
	t.Helper()
	opts, err := kclient.SecurityOpts(sec)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}

// noSecrets checks the router's log, /topology in every format and
// /tasks hold no password.
func noSecrets(t *testing.T, r *router, secrets ...string) {
	t.Helper()
	texts := map[string]string{}
	if b, err := os.ReadFile(r.logPath); err == nil {
		texts["log"] = string(b)
	} else {
		t.Fatal(err)
	}
	if !r.exited() {
		for _, path := range []string{"/topology", "/topology?format=dot", "/topology?format=mermaid", "/tasks"} {
			code, b, err := r.get(path)
			if err != nil || code != http.StatusOK {
				t.Errorf("GET %s: %d %v", path, code, err)
			}
			texts[path] = string(b)
		}
	}
	for where, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("the password appears in %s", where)
			}
		}
	}
}

// cpuTime is the user + system CPU time of a process.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

func envLookup(env []string) func(string) string {
	return func(k string) string {
		for _, kv := range env {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	}
}

// ---------------------------------------------------------------- scenario

// newSecureScenario is newScenario on the secure broker: topics are made
// and read back over its PLAINTEXT listener; only the router uses the
// secure ones.
func newSecureScenario(t *testing.T, b *secureBroker, name string, n int) *scenario {
	t.Helper()
	seed := scenarioSeed(t)
	prefix := "it-" + name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	s := &scenario{
		t: t, name: name, app: prefix, input: prefix + ".logs", dir: t.TempDir(),
		brokers: b.plaintext, rng: mrand.New(mrand.NewPCG(seed, seed>>1|1)),
		byID: make(map[string]*gen.Event, n), want: map[string]int{}, started: time.Now(),
	}
	s.writeTopology(prefix)
	s.connect() // waits until the input topic is in the metadata
	s.generate(seed, n)
	return s
}

// appendTopology adds YAML to the scenario's topology file.
func (s *scenario) appendTopology(y string) {
	if y == "" {
		return
	}
	f, err := os.OpenFile(s.config, os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(y)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		s.t.Fatal(err)
	}
}

// startRouterEnv is startRouter on other brokers; a non-nil env replaces
// the test's security variables (none are inherited then), nil inherits
// the test's environment as it is.
func (s *scenario) startRouterEnv(id string, brokers, env []string, extra ...string) *router {
	s.t.Helper()
	r := &router{s: s, id: id, addr: freeAddr(s.t), extra: extra,
		logPath: filepath.Join(s.dir, "router-"+id+".log"), done: make(chan struct{})}
	args := append([]string{"run", "--config", s.config, "--brokers", strings.Join(brokers, ","),
		"--listen", r.addr, "--instance-id", id}, extra...)
	f, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	// The log names the variables, never their values.
	var names []string
	for _, kv := range env {
		names = append(names, strings.SplitN(kv, "=", 2)[0])
	}
	fmt.Fprintf(f, "=== itest %s: start %s %s (env %s)\n", time.Now().Format(time.RFC3339Nano), routerBin, strings.Join(args, " "), strings.Join(names, " "))
	r.cmd = exec.Command(routerBin, args...)
	if env != nil {
		r.cmd.Env = append(withoutEnv("SIDESTREAM_SECURITY_", "SIDESTREAM_SASL_", "SIDESTREAM_TLS_"), env...)
	}
	r.cmd.Stdout, r.cmd.Stderr = f, f
	if err := r.cmd.Start(); err != nil {
		f.Close()
		s.t.Fatalf("start router %s: %v", id, err)
	}
	r.started = time.Now()
	go func() {
		_ = r.cmd.Wait()
		fmt.Fprintf(f, "=== itest %s: exited: %s\n", time.Now().Format(time.RFC3339Nano), r.cmd.ProcessState)
		f.Close()
		close(r.done)
	}()
	s.mu.Lock()
	s.routers = append(s.routers, r)
	s.mu.Unlock()
	s.t.Cleanup(r.kill)
	return r
}

// withoutEnv is the test's environment without the variables that start
// with any of the prefixes.
func withoutEnv(prefixes ...string) []string {
	var out []string
next:
	for _, kv := range os.Environ() {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------- broker

// startSecureBroker generates the certificates, picks four free loopback
// ports and starts a broker of its own with scripts/kafka.sh's secure
// listeners; the test's cleanup stops it and deletes its data. The
// default broker (SIDESTREAM_IT_BROKERS) is never touched.
func startSecureBroker(t *testing.T) *secureBroker {
	t.Helper()
	stopAbandonedSecureBrokers(t)
	dir, err := os.MkdirTemp("", secureDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	tlsDir := filepath.Join(dir, "tls")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeCerts(t, tlsDir)
	// The owner's pid lets a later run stop this broker if this test
	// process dies without its cleanup.
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePortRun(t, 4)
	b := &secureBroker{
		dir:       filepath.Join(dir, "kafka"),
		plaintext: []string{"127.0.0.1:" + strconv.Itoa(port)},
		sasl:      []string{"127.0.0.1:" + strconv.Itoa(port+2)},
		ssl:       []string{"127.0.0.1:" + strconv.Itoa(port+3)},
		tls:       tlsDir,
	}
	env := append(withoutEnv("SIDESTREAM_KAFKA_"),
		"SIDESTREAM_KAFKA_DIR="+b.dir,
		"SIDESTREAM_KAFKA_PORT="+strconv.Itoa(port),
		"SIDESTREAM_KAFKA_HEAP_OPTS=-Xms128m -Xmx512m",
		"SIDESTREAM_KAFKA_SASL_PORT="+strconv.Itoa(port+2),
		"SIDESTREAM_KAFKA_SASL_USERS="+saslUser+":"+saslPassword,
		"SIDESTREAM_KAFKA_OAUTH_REAUTH_MS="+oauthReauthMs,
		"SIDESTREAM_KAFKA_SSL_PORT="+strconv.Itoa(port+3),
		"SIDESTREAM_KAFKA_SSL_CERT="+filepath.Join(tlsDir, "broker.pem"),
		"SIDESTREAM_KAFKA_SSL_KEY="+filepath.Join(tlsDir, "broker-key.pem"),
		"SIDESTREAM_KAFKA_SSL_CLIENT_CA="+filepath.Join(tlsDir, "ca.pem"),
		"SIDESTREAM_KAFKA_AUTHORIZER=1", // for acl_denied; no ACL, so everything else is allowed
	)
	t.Cleanup(func() {
		if out, err := secureKafka(env, "down"); err != nil {
			t.Errorf("stop the secure broker: %v\n%s", err, out)
		}
		os.RemoveAll(dir)
	})
	if out, err := secureKafka(env, "up"); err != nil {
		t.Fatalf("start the secure broker: %v\n%s", err, out)
	}
	return b
}

func secureKafka(env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("../scripts/kafka.sh", args...)
	cmd.Env = env
	return cmd.CombinedOutput()
}

// stopAbandonedSecureBrokers stops the secure brokers of test runs that
// died before their cleanup (their owner pid is gone), so none is left
// running for long.
func stopAbandonedSecureBrokers(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), secureDirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue // alive (or unreadable): not ours to stop
		}
		env := append(withoutEnv("SIDESTREAM_KAFKA_"), "SIDESTREAM_KAFKA_DIR="+filepath.Join(dir, "kafka"))
		if out, err := secureKafka(env, "down"); err != nil {
			t.Logf("stop the abandoned secure broker in %s: %v\n%s", dir, err, out)
			continue
		}
		t.Logf("stopped the secure broker of a dead test run (pid %d) in %s", pid, dir)
		os.RemoveAll(dir)
	}
}

// freePortRun finds n consecutive free loopback ports and returns the
// first.
func freePortRun(t *testing.T, n int) int {
	t.Helper()
	for range 200 {
		base := 29100 + mrand.IntN(20000)
	try:
		for i := range n {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if err != nil {
				break try
			}
			ln.Close()
			if i == n-1 {
				return base
			}
		}
	}
	t.Fatalf("no %d consecutive free ports found", n)
	return 0
}

// writeCerts writes a self-signed CA and, signed by it, the broker's
// certificate (for tlsName only, no IP, so the client must set the
// server name) and a client certificate, as PEM with PKCS#8 keys:
// ca.pem, broker.pem, broker-key.pem, client.pem, client-key.pem.
func writeCerts(t *testing.T, dir string) {
	t.Helper()
	now := time.Now()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(1)
	issue := func(tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) *x509.Certificate {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		write(name, "PRIVATE KEY", der)
	}
	caKey := newKey()
	ca := issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: "sidestream test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, caKey, nil, nil)
	write("ca.pem", "CERTIFICATE", ca.Raw)

	brokerKey := newKey()
	broker := issue(&x509.Certificate{
		Subject: pkix.Name{CommonName: tlsName}, DNSNames: []string{tlsName},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, brokerKey, ca, caKey)
	write("broker.pem", "CERTIFICATE", broker.Raw)
	writeKey("broker-key.pem", brokerKey)

	clientKey := newKey()
	client := issue(&x509.Certificate{
		Subject:  pkix.Name{CommonName: "sidestream-router"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, clientKey, ca, caKey)
	write("client.pem", "CERTIFICATE", client.Raw)
	writeKey("client-key.pem", clientKey)
}
