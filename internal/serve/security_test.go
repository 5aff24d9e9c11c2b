package serve

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/config"
)

const secretPW = "pw-8d1c4e-never-printed"

// TestSecurityWarnings: skip-verify and a password in the file are
// warned about at start, without the password.
func TestSecurityWarnings(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	t.Setenv(config.EnvSASLPassword, "")
	securityWarnings(log, config.Security{Protocol: config.ProtocolSASLSSL, TLS: config.TLS{InsecureSkipVerify: true},
		SASL: config.SASL{Mechanism: config.SASLPlain, Username: "u", Password: secretPW}})
	out := buf.String()
	for _, want := range []string{"level=WARN msg=\"TLS certificate verification is off", "level=WARN msg=\"the SASL password is written in the topology file"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, secretPW) {
		t.Errorf("the password is logged:\n%s", out)
	}
	buf.Reset()
	securityWarnings(log, config.Security{Protocol: config.ProtocolSSL, TLS: config.TLS{CAFile: "ca.pem"}})
	if buf.Len() != 0 {
		t.Errorf("warnings for a sound config: %s", buf.String())
	}
}
