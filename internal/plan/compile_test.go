package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/config"
)

// TestCompileCollectsFields checks the topology-wide field list the
// decoder gets: the union over when, key and project, sorted.
func TestCompileCollectsFields(t *testing.T) {
	src := strings.Replace(minimalYAML, "    topic: out\n",
		"    topic: out\n    when: level == \"x\" && _key != \"\"\n    key: service\n    project: {u: user_id, l: lower(level)}\n", 1)
	top, err := Compile(mustLoad(t, src), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"level", "service", "user_id"}; !reflect.DeepEqual(top.Fields, want) {
		t.Errorf("Fields = %q, want %q", top.Fields, want)
	}
	r := top.Route("main")
	if r == nil || r.When == nil || r.Key == nil || len(r.Project) != 2 || r.Project[0].Name != "u" {
		t.Fatalf("route = %+v", r)
	}
	if top.Route("nope") != nil {
		t.Error("Route(nope) != nil")
	}
	if got, want := top.OutputTopics(), []string{"out", "out.dirty"}; !reflect.DeepEqual(got, want) {
		t.Errorf("OutputTopics = %q, want %q", got, want)
	}
	if got, want := top.InputTopics(), []string{"in"}; !reflect.DeepEqual(got, want) {
		t.Errorf("InputTopics = %q, want %q", got, want)
	}
	if top.Default != r {
		t.Errorf("Default = %v, want the main route", top.Default)
	}
}

// FuzzLoad feeds arbitrary bytes to Load. It must never panic and must
// return exactly one of a config and an error; an error is a *ConfigError
// whose every line has the FILE:LINE:COL: message shape. A config that
// loads must compile and describe: Load is the only gate before the
// runtime. Seeds are the good and bad configs of testdata; crashers found
// once live in testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"../config/testdata/good/*.yaml", "../config/testdata/bad/*.bad.yaml", "../../examples/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	// The name puts relative schema paths in testdata/good, where the
	// seeds' schemas are.
	const name = "../config/testdata/good/fuzz.yaml"
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := config.Load(name, b)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Load = %v, %v: want exactly one of them", cfg, err)
		}
		if err != nil {
			var ce *config.ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error %T %q is not a *config.ConfigError with problems", err, err)
			}
			for _, p := range ce.Problems {
				if p.File != name || p.Pos.Line < 1 || p.Pos.Col < 1 || p.Msg == "" || strings.ContainsAny(p.Msg, "\n\r") {
					t.Fatalf("malformed problem %#v", p)
				}
			}
			return
		}
		top, err := Compile(cfg, config.DirOf(name))
		if err != nil {
			t.Fatalf("loaded config does not compile: %v", err)
		}
		for _, format := range DescribeFormats {
			if _, err := top.Describe(format); err != nil {
				t.Fatalf("Describe(%s): %v", format, err)
			}
		}
	})
}

func TestGoodConfigs(t *testing.T) {
	files, err := filepath.Glob("../config/testdata/good/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../examples/logs-by-level.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := config.LoadFile(f); err != nil {
				t.Fatalf("LoadFile(%s):\n%v", f, err)
			}
			if _, err := Open(f); err != nil {
				t.Fatalf("Open(%s): %v", f, err)
			}
		})
	}
}

// The URL, the username and the password may come from the environment
// alone; the password never prints.
func TestRegistryFromEnvironment(t *testing.T) {
	cfg, err := config.Load("registry.yaml", []byte(registryConfig))
	if err != nil {
		t.Fatalf("a registry format loads before its URL is known: %v", err)
	}
	env := map[string]string{config.EnvRegistryURL: "https://registry:8081", config.EnvRegistryUsername: "router", config.EnvRegistryPassword: leak}
	if err := cfg.Apply(config.OverridesFromEnv(func(k string) string { return env[k] })); err != nil {
		t.Fatal(err)
	}
	s := cfg.SchemaRegistry
	if s.URL != "https://registry:8081" || s.Username != "router" || s.Password.Reveal() != leak {
		t.Fatalf("schema_registry %+v", s)
	}
	if strings.Contains(s.Password.String(), leak) {
		t.Fatal("the password prints")
	}
	top, err := Compile(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	if !config.RegistryFormat(top.Inputs[0].Format) || config.RegistryFormat(top.Inputs[1].Format) {
		t.Fatalf("formats %q %q: want avro, then the default json", top.Inputs[0].Format, top.Inputs[1].Format)
	}
}

// TestSecurityNeverPrinted: a config and topology holding a password
// print without it through every path a log line or an API answer can
// take: fmt verbs, slog, JSON, YAML and every Describe format.
func TestSecurityNeverPrinted(t *testing.T) {
	src := minimalYAML + "brokers: [a:1]\nsecurity:\n  protocol: sasl_plaintext\n  sasl:\n    mechanism: PLAIN\n    username: alice\n    password: " + leak + "\n"
	cfg := mustLoad(t, src)
	if err := cfg.Apply(config.Overrides{}); err != nil {
		t.Fatal(err)
	}
	top, err := Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Security.SASL.Password.Reveal() != leak {
		t.Fatalf("password = %q", cfg.Security.SASL.Password.Reveal())
	}
	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		outputs["fmt "+verb] = fmt.Sprintf(verb, *cfg) + fmt.Sprintf(verb, cfg.Security) + fmt.Sprintf(verb, cfg.Security.SASL.Password)
	}
	outputs["fmt topology"] = fmt.Sprintf("%+v %+v", *top, top.Settings)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "cfg", cfg, "security", cfg.Security, "password", cfg.Security.SASL.Password)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "cfg", cfg, "security", cfg.Security, "password", cfg.Security.SASL.Password)
	outputs["slog"] = buf.String()
	j, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	outputs["json"] = string(j)
	y, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	outputs["yaml"] = string(y)
	for _, f := range DescribeFormats {
		b, err := top.Describe(f)
		if err != nil {
			t.Fatal(err)
		}
		outputs["describe "+f] = string(b)
	}
	for where, out := range outputs {
		if strings.Contains(out, leak) || strings.Contains(out, fmt.Sprintf("%x", leak)) {
			t.Errorf("%s shows the password:\n%s", where, out)
		}
	}
	if !strings.Contains(outputs["json"], `"[redacted]"`) {
		t.Errorf("JSON does not show the password as redacted: %s", outputs["json"])
	}
	if config.Secret("").String() != "" {
		t.Error("an empty secret prints as non-empty")
	}
}

func TestCreateConfigs(t *testing.T) {
	cfg, err := config.Load("t.yaml", []byte(`
application_id: app
brokers: [127.0.0.1:9092]
topics:
  configs:
    retention.ms: 604800000
    cleanup.policy: delete
inputs:
  - topic: orders
  - topic: refunds
    on_gap: fail
    start: latest
routes:
  - name: upserts
    topic: orders.upserts
    key: id
    topic_configs:
      cleanup.policy: compact
  - name: per-minute
    topic: orders.per-minute
    window:
      type: tumbling
      size: 1m
      late_topic: orders.late
      late_topic_configs:
        retention.ms: 86400000
      aggregates:
        - name: n
          fn: count
routing:
  default: upserts
dirty:
  topic: orders.dirty
`))
	if err != nil {
		t.Fatal(err)
	}
	top, err := Compile(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	get := func(topic string) map[string]string {
		out := map[string]string{}
		for k, v := range top.CreateConfigs(topic) {
			out[k] = *v
		}
		return out
	}
	rep, cl := top.InternalTopics()
	for topic, want := range map[string]map[string]string{
		"orders.upserts": {"retention.ms": "604800000", "cleanup.policy": "compact"},
		"orders.late":    {"retention.ms": "86400000", "cleanup.policy": "delete"},
		"orders.dirty":   {"retention.ms": "604800000", "cleanup.policy": "delete"},
		rep[0]:           {"retention.ms": "-1", "retention.bytes": "-1", "cleanup.policy": "delete"},
		cl[0]:            {"retention.ms": "604800000", "cleanup.policy": "compact"},
	} {
		got := get(topic)
		if len(got) != len(want) {
			t.Errorf("%s: configs %v, want %v", topic, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q (all: %v)", topic, k, got[k], v, got)
			}
		}
	}
	if got := top.InputStart("orders"); got != config.StartEarliest {
		t.Errorf("start of orders = %q, want the default %q", got, config.StartEarliest)
	}
	if got := top.InputStart("refunds"); got != config.StartLatest {
		t.Errorf("start of refunds = %q", got)
	}
	if top.GapPolicy("orders") != config.GapSkip || top.GapPolicy("refunds") != config.GapFail || top.GapPolicy(rep[0]) != config.GapFail {
		t.Errorf("gap policies: orders %s, refunds %s, %s %s", top.GapPolicy("orders"), top.GapPolicy("refunds"), rep[0], top.GapPolicy(rep[0]))
	}
	if cfg.Topics.PurgeInterval.D() != config.DefaultPurgeInterval || cfg.Topics.OnRepartitionRetention != config.RetentionWarn {
		t.Errorf("topics defaults: %+v", cfg.Topics)
	}
}

// minimalYAML is the least a topology needs; every other field defaults.
const minimalYAML = `application_id: app
inputs: [{topic: in}]
routing: {default: main}
routes:
  - name: main
    topic: out
dirty: {topic: out.dirty}
`

func mustLoad(t *testing.T, src string) *config.Config {
	t.Helper()
	cfg, err := config.Load("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Load:\n%v", err)
	}
	return cfg
}

const registryConfig = `application_id: orders-router
brokers: [127.0.0.1:9092]
inputs:
  - topic: orders
    format: avro
  - topic: audit
routing:
  default: main
routes:
  - name: main
    topic: orders.main
dirty:
  topic: orders.dirty
`

// leak is the password of the security test configs: no output may hold
// it.
const leak = "hunter2-must-not-print"
