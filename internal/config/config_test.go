package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// minimalYAML is the least a topology needs; every other field defaults.
const minimalYAML = `application_id: app
inputs: [{topic: in}]
routing: {default: main}
routes:
  - name: main
    topic: out
dirty: {topic: out.dirty}
`

func mustLoad(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := Load("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Load:\n%v", err)
	}
	return cfg
}

func TestDefaults(t *testing.T) {
	cfg := mustLoad(t, minimalYAML)
	checks := []struct {
		name      string
		got, want any
	}{
		{"guarantee", cfg.Guarantee, ExactlyOnce},
		{"commit_interval", cfg.CommitInterval.D(), 100 * time.Millisecond},
		{"commit_records", cfg.CommitRecords, DefaultCommitRecords},
		{"commit_when_drained", *cfg.CommitWhenDrained, true},
		{"topics.create", *cfg.Topics.Create, true},
		{"topics.partitions", cfg.Topics.Partitions, int32(DefaultPartitions)},
		{"topics.replication_factor", cfg.Topics.ReplicationFactor, int16(-1)},
		{"inputs[0].format", cfg.Inputs[0].Format, "json"},
		{"event_time.format", cfg.EventTime.Format, TimeKafka},
		{"routing.match", cfg.Routing.Match, MatchFirst},
		{"routes[0].value", cfg.Routes[0].Value, ValueOriginal},
		{"dirty.max_record_bytes", cfg.Dirty.MaxRecordBytes, DefaultMaxRecordBytes},
		{"dirty.truncate_to", cfg.Dirty.TruncateTo, DefaultTruncateTo},
		{"shutdown_timeout", cfg.Shutdown.D(), DefaultShutdown},
		{"brokers", len(cfg.Brokers), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// TestDefaultsInferred covers the defaults that depend on other fields.
func TestDefaultsInferred(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(string) string
		check func(*Config) (got, want any)
	}{
		{
			name: "event time field without format is epoch_ms",
			edit: func(s string) string { return s + "event_time: {field: ts}\n" },
			check: func(c *Config) (any, any) {
				return c.EventTime.Format, TimeEpochMillis
			},
		},
		{
			name: "project without value is a projection",
			edit: func(s string) string {
				return strings.Replace(s, "    topic: out\n", "    topic: out\n    project: {id: id}\n", 1)
			},
			check: func(c *Config) (any, any) { return c.Routes[0].Value, ValueProjection },
		},
		{
			name: "explicit value wins",
			edit: func(s string) string {
				return strings.Replace(s, "    topic: out\n", "    topic: out\n    value: original\n", 1)
			},
			check: func(c *Config) (any, any) { return c.Routes[0].Value, ValueOriginal },
		},
		{
			name: "small max_record_bytes shrinks the default truncation",
			edit: func(s string) string {
				return strings.Replace(s, "dirty: {topic: out.dirty}", "dirty: {topic: out.dirty, max_record_bytes: 4096}", 1)
			},
			check: func(c *Config) (any, any) { return c.Dirty.TruncateTo, 4096 - 1024 },
		},
		{
			name:  "create false is kept",
			edit:  func(s string) string { return s + "topics: {create: false}\n" },
			check: func(c *Config) (any, any) { return *c.Topics.Create, false },
		},
		{
			name: "written values are kept",
			edit: func(s string) string {
				return s + "guarantee: at_least_once\ncommit_interval: 2s\ncommit_records: 7\ntopics: {partitions: 3, replication_factor: 2}\n"
			},
			check: func(c *Config) (any, any) {
				return []any{c.Guarantee, c.CommitInterval.D(), c.CommitRecords, c.Topics.Partitions, c.Topics.ReplicationFactor},
					[]any{AtLeastOnce, 2 * time.Second, 7, int32(3), int16(2)}
			},
		},
		{
			name: "projection keeps the written field order",
			edit: func(s string) string {
				return strings.Replace(s, "    topic: out\n", "    topic: out\n    project:\n      z: a\n      a: b\n      m: c\n", 1)
			},
			check: func(c *Config) (any, any) {
				return c.Routes[0].Project, Projection{{"z", "a"}, {"a", "b"}, {"m", "c"}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := tt.check(mustLoad(t, tt.edit(minimalYAML)))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestOverridesFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Overrides
	}{
		{"none", nil, Overrides{}},
		{
			name: "all",
			env: map[string]string{
				"SIDESTREAM_BROKERS":         " a:1, b:2 ,,",
				"SIDESTREAM_APPLICATION_ID":  "app2",
				"SIDESTREAM_GUARANTEE":       "at_least_once",
				"SIDESTREAM_COMMIT_INTERVAL": "1s",
			},
			want: Overrides{Brokers: []string{"a:1", "b:2"}, ApplicationID: "app2", Guarantee: "at_least_once", CommitInterval: "1s"},
		},
		{"only commas", map[string]string{"SIDESTREAM_BROKERS": " , "}, Overrides{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := OverridesFromEnv(func(k string) string { return tt.env[k] })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOverridesMerge(t *testing.T) {
	env := Overrides{Brokers: []string{"env:1"}, ApplicationID: "env", Guarantee: "exactly_once", CommitInterval: "1s"}
	flags := Overrides{Brokers: []string{"flag:1"}, CommitInterval: "2s"}
	got := env.Merge(flags)
	want := Overrides{Brokers: []string{"flag:1"}, ApplicationID: "env", Guarantee: "exactly_once", CommitInterval: "2s"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %+v, want %+v", got, want)
	}
	if got := env.Merge(Overrides{}); !reflect.DeepEqual(got, env) {
		t.Errorf("Merge(empty) = %+v, want %+v", got, env)
	}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name    string
		file    string // extra YAML
		o       Overrides
		wantErr string // substring; "" for success
		check   func(*Config) bool
	}{
		{name: "no brokers anywhere", wantErr: ErrNoBrokers.Error()},
		{name: "brokers from the file", file: "brokers: [f:9092]\n", check: func(c *Config) bool { return c.Brokers[0] == "f:9092" }},
		{
			name: "every override wins", file: "brokers: [f:9092]\n",
			o: Overrides{Brokers: []string{"o:1", "[::1]:2"}, ApplicationID: "other", Guarantee: "at_least_once", CommitInterval: "250ms"},
			check: func(c *Config) bool {
				return reflect.DeepEqual(c.Brokers, []string{"o:1", "[::1]:2"}) && c.ApplicationID == "other" &&
					c.Guarantee == AtLeastOnce && c.CommitInterval.D() == 250*time.Millisecond
			},
		},
		{name: "broker without port", o: Overrides{Brokers: []string{"host"}}, wantErr: `broker "host" needs a port`},
		{name: "broker bad port", o: Overrides{Brokers: []string{"host:x"}}, wantErr: `port "x" is not a number`},
		{name: "bad application id", file: "brokers: [f:9092]\n", o: Overrides{ApplicationID: "a b"}, wantErr: `application id "a b"`},
		{name: "bad guarantee", file: "brokers: [f:9092]\n", o: Overrides{Guarantee: "maybe"}, wantErr: `got "maybe"`},
		{name: "bad interval", file: "brokers: [f:9092]\n", o: Overrides{CommitInterval: "10"}, wantErr: `commit interval "10"`},
		{name: "zero interval", file: "brokers: [f:9092]\n", o: Overrides{CommitInterval: "0s"}, wantErr: `commit interval "0s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, minimalYAML+tt.file)
			err := cfg.Apply(tt.o)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Apply: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Apply error = %v, want one containing %q", err, tt.wantErr)
			}
			if tt.check != nil && !tt.check(cfg) {
				t.Errorf("config after Apply: %+v", cfg)
			}
		})
	}
	cfg := mustLoad(t, minimalYAML)
	if err := cfg.Apply(Overrides{}); !errors.Is(err, ErrNoBrokers) {
		t.Errorf("Apply without brokers = %v, want ErrNoBrokers", err)
	}
}

func TestCheckBroker(t *testing.T) {
	tests := []struct {
		in, wantErr string
	}{
		{"localhost:9092", ""},
		{"10.0.0.1:1", ""},
		{"[::1]:65535", ""},
		{"kafka", `broker "kafka" needs a port (host:port, e.g. "kafka:9092")`},
		{"", `broker "" needs a port (host:port, e.g. ":9092")`},
		{":9092", `broker ":9092" needs a host before the port`},
		{"h:0", `broker "h:0": port "0" is not a number from 1 to 65535`},
		{"h:65536", `broker "h:65536": port "65536" is not a number from 1 to 65535`},
		{"h:", `broker "h:": port "" is not a number from 1 to 65535`},
		{"::1:9092", `broker "::1:9092" is not host:port (write an IPv6 address as [::1]:9092)`},
	}
	for _, tt := range tests {
		err := checkBroker(tt.in)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.wantErr {
			t.Errorf("checkBroker(%q) = %q, want %q", tt.in, got, tt.wantErr)
		}
	}
}

func TestSuggest(t *testing.T) {
	fields := map[string]int{"topic": 0, "format": 1, "schema": 2}
	tests := []struct{ in, want string }{
		{"topc", ` (did you mean "topic"?)`},
		{"fromat", ` (did you mean "format"?)`},
		{"schemas", ` (did you mean "schema"?)`},
		{"codec", " (known fields: format, schema, topic)"},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, fields); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestLoadErrorsAreConfigErrors checks that problems found in bytes (not
// only in files) come as one *ConfigError with every problem, in file order.
func TestLoadErrorsAreConfigErrors(t *testing.T) {
	_, err := Load("x.yaml", []byte("routes: [{name: A}]\napplication_id: 'a b'\n"))
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error %T, want *ConfigError", err)
	}
	for i := 1; i < len(ce.Problems); i++ {
		a, b := ce.Problems[i-1].Pos, ce.Problems[i].Pos
		if a.Line > b.Line || (a.Line == b.Line && a.Col > b.Col) {
			t.Errorf("problems out of order: %v before %v", ce.Problems[i-1], ce.Problems[i])
		}
	}
	if len(ce.Problems) < 4 {
		t.Errorf("want every problem reported, got:\n%v", err)
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile("testdata/does-not-exist.yaml")
	var ce *ConfigError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("LoadFile(missing) = %v; want an I/O error naming the file", err)
	}
}
