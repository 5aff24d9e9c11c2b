package processor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/sidestream/sidestream/kclient"
	"github.com/sidestream/sidestream/kclient/kclienttest"
	"github.com/sidestream/sidestream/topology"
)

// TestEveryClientIsSecured: the group client, the admin client and the
// restore client (all built from the processor's options) get the
// topology's TLS and SASL settings.
func TestEveryClientIsSecured(t *testing.T) {
	ca, _, _ := kclienttest.PKI(t)
	src := fmt.Sprintf(`application_id: unit
brokers: [127.0.0.1:9092]
inputs: [{topic: in}]
routing: {default: all}
routes: [{name: all, topic: out}]
dirty: {topic: dirty}
security:
  protocol: sasl_ssl
  tls: {ca_file: %q}
  sasl: {mechanism: SCRAM-SHA-512, username: router}
`, ca)
	cfg, err := topology.Load("unit.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(topology.Overrides{Security: topology.SecurityOverrides{Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	top, err := topology.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(top, WithKgoOpts(kgo.ClientID("x")))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, opts []kgo.Opt) {
		t.Helper()
		names, tc := kclienttest.OptValues(t, opts...)
		if strings.Join(names, ",") != "SCRAM-SHA-512" || tc == nil || tc.RootCAs == nil {
			t.Errorf("%s: SASL %v, TLS %v: want SCRAM-SHA-512 over TLS with the CA", what, names, tc)
		}
	}
	check("group client", p.clientOpts())
	check("admin and restore clients", p.opts.kgoOpts)
	_, admCl, err := kclient.NewAdmin(top.Config.Brokers, p.opts.kgoOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if ms, _ := admCl.OptValue(kgo.SASL).([]sasl.Mechanism); len(ms) != 1 {
		t.Errorf("admin client SASL = %v", ms)
	}

	// A config whose settings cannot be used fails New, not the first dial.
	top.Config.Security.SASL.Password = ""
	if _, err := New(top); err == nil || !strings.Contains(err.Error(), "password") {
		t.Errorf("New without a password: %v", err)
	}
}
