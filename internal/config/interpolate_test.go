package config

import (
	"errors"
	"strings"
	"testing"
)

func withEnv(t *testing.T, env map[string]string) {
	t.Helper()
	old := getenv
	getenv = func(k string) string { return env[k] }
	t.Cleanup(func() { getenv = old })
}

const interpolated = `application_id: ${APP:orders-router}
brokers: ["${BROKER}"]
inputs:
  - topic: ${PREFIX}orders
topics:
  partitions: ${PARTITIONS:6}
  create: ${CREATE:true}
routing:
  default: main
routes:
  - name: main
    topic: '${PREFIX}orders.main'
    when: region == "${REGION:eu}"
  - name: literal
    topic: orders.literal
    when: note == "$${HOME}"
dirty:
  topic: ${PREFIX}orders.dirty
`

func TestInterpolation(t *testing.T) {
	withEnv(t, map[string]string{"BROKER": "kafka-1:9092", "PREFIX": "prod.", "PARTITIONS": "12", "REGION": ""})
	cfg, err := Load("t.yaml", []byte(interpolated))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ApplicationID != "orders-router" || cfg.Brokers[0] != "kafka-1:9092" || cfg.Inputs[0].Topic != "prod.orders" ||
		cfg.Topics.Partitions != 12 || cfg.Routes[0].Topic != "prod.orders.main" || cfg.Dirty.Topic != "prod.orders.dirty" {
		t.Errorf("interpolated config: %+v", cfg)
	}
	if cfg.Routes[0].When != `region == "eu"` {
		t.Errorf("an empty variable takes the default: %q", cfg.Routes[0].When)
	}
	if cfg.Routes[1].When != `note == "${HOME}"` {
		t.Errorf("$${ is a literal ${: %q", cfg.Routes[1].When)
	}
}

func TestInterpolationErrors(t *testing.T) {
	withEnv(t, map[string]string{"PARTITIONS": "many"})
	_, err := Load("t.yaml", []byte(interpolated))
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("want a ConfigError, got %v", err)
	}
	got := ce.Error()
	for _, want := range []string{
		"t.yaml:2:12: environment variable BROKER is not set (and ${BROKER} has no default: write ${BROKER:default})",
		"t.yaml:4:12: environment variable PREFIX is not set",
		"t.yaml:12:13: environment variable PREFIX is not set",
		"t.yaml:6:15: topics.partitions:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	withEnv(t, map[string]string{})
	_, err = Load("t.yaml", []byte("application_id: ${bad-name}\n"))
	if err == nil || !strings.Contains(err.Error(), `t.yaml:1:17: malformed reference "${bad-name}"`) {
		t.Errorf("malformed: %v", err)
	}
}
