package config

import (
	"testing"
)

func TestCreateConfigs(t *testing.T) {
	cfg, err := Load("t.yaml", []byte(`
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
	if got := top.InputStart("orders"); got != StartEarliest {
		t.Errorf("start of orders = %q, want the default %q", got, StartEarliest)
	}
	if got := top.InputStart("refunds"); got != StartLatest {
		t.Errorf("start of refunds = %q", got)
	}
	if top.GapPolicy("orders") != GapSkip || top.GapPolicy("refunds") != GapFail || top.GapPolicy(rep[0]) != GapFail {
		t.Errorf("gap policies: orders %s, refunds %s, %s %s", top.GapPolicy("orders"), top.GapPolicy("refunds"), rep[0], top.GapPolicy(rep[0]))
	}
	if cfg.Topics.PurgeInterval.D() != DefaultPurgeInterval || cfg.Topics.OnRepartitionRetention != RetentionWarn {
		t.Errorf("topics defaults: %+v", cfg.Topics)
	}
}
