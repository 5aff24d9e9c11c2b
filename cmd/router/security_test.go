package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
)

const secretPW = "pw-8d1c4e-never-printed"

func writeTopology(t *testing.T, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.yaml")
	src := "application_id: a\nbrokers: [127.0.0.1:9]\ninputs: [{topic: in}]\nrouting: {default: main}\nroutes: [{name: main, topic: out}]\ndirty: {topic: out.dirty}\n" + extra
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunSecurityErrors: incomplete or bad security settings stop `router
// run` before it dials, with messages that name the field or variable
// and never the password.
func TestRunSecurityErrors(t *testing.T) {
	cfg := writeTopology(t, "security:\n  protocol: sasl_ssl\n")
	t.Setenv(config.EnvSASLPassword, secretPW)
	t.Setenv(config.EnvSASLMechanism, "GSSAPI")
	code, _, errs := run(t, "run", "--config", cfg, "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errs, `SIDESTREAM_SASL_MECHANISM must be PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM; got "GSSAPI"`) {
		t.Errorf("bad mechanism: exit %d: %s", code, errs)
	}
	t.Setenv(config.EnvSASLMechanism, "scram-sha-256")
	code, _, errs = run(t, "run", "--config", cfg, "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errs, cfg+`:8:3: security.protocol is "sasl_ssl": security.sasl.username (or SIDESTREAM_SASL_USERNAME) is required`) {
		t.Errorf("no username: exit %d: %s", code, errs)
	}
	if strings.Contains(errs, secretPW) {
		t.Errorf("the password is printed: %s", errs)
	}
}

// TestTopologyHidesPassword: `router topology` in every format, for a
// file that holds a password.
func TestTopologyHidesPassword(t *testing.T) {
	cfg := writeTopology(t, "security:\n  protocol: sasl_plaintext\n  sasl: {mechanism: PLAIN, username: u, password: "+secretPW+"}\n")
	for _, f := range plan.DescribeFormats {
		code, out, errs := run(t, "topology", "--config", cfg, "--format", f)
		if code != 0 || strings.Contains(out+errs, secretPW) {
			t.Errorf("topology --format %s: exit %d, password shown: %v", f, code, strings.Contains(out+errs, secretPW))
		}
	}
	if code, out, _ := run(t, "validate", "--config", cfg); code != 0 || strings.Contains(out, secretPW) {
		t.Errorf("validate: exit %d: %s", code, out)
	}
}
