package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadConfigs loads every testdata/bad/*.bad.yaml and compares the
// whole error text with its .golden file: the messages are the user
// interface of `router validate`, so any change to them is reviewed.
func TestBadConfigs(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found %d bad configs, want at least 20", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".bad.yaml")
		t.Run(name, func(t *testing.T) {
			cfg, err := LoadFile(f)
			if err == nil {
				t.Fatalf("LoadFile(%s) = %+v, want an error", f, cfg)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("LoadFile(%s) error is %T, want *ConfigError: %v", f, err, err)
			}
			for _, p := range ce.Problems {
				if p.File != f {
					t.Errorf("problem names file %q, want %q", p.File, f)
				}
				if p.Pos.Line < 1 || p.Pos.Col < 1 {
					t.Errorf("problem has no position: %v", p)
				}
			}
			checkGolden(t, strings.TrimSuffix(f, ".bad.yaml")+".golden", []byte(err.Error()))
		})
	}
}

// TestExprErrorPositions checks that an expression error points at the
// token in the file when the value is written as it reads, and at the
// value with the column inside the expression otherwise.
func TestExprErrorPositions(t *testing.T) {
	const head = "application_id: a\ninputs: [{topic: in}]\nrouting: {default: r}\ndirty: {topic: d}\nroutes:\n  - name: r\n    topic: out\n"
	tests := []struct {
		name, when, want string
	}{
		{"plain", "    when: a > 1 &&\n", "t.yaml:8:18: routes[0].when: the expression ends too early"},
		{"single quoted", "    when: 'a > 1 &&'\n", "t.yaml:8:19: routes[0].when: the expression ends too early"},
		{"double quoted", "    when: \"a > 1 &&\"\n", "t.yaml:8:19: routes[0].when: the expression ends too early"},
		{"double quoted with escape", "    when: \"a == \\\"x\\\" &&\"\n", "t.yaml:8:11: routes[0].when: the expression ends too early (at column 11 of the expression)"},
		{"single quoted with quote", "    when: 'a == ''x'' &&'\n", "t.yaml:8:11: routes[0].when: the expression ends too early (at column 11 of the expression)"},
		{"literal block", "    when: |\n      a > 1 &&\n      b ==\n", "t.yaml:8:11: routes[0].when: the expression ends too early (at line 2, column 5 of the expression)"},
		{"flow mapping", "    project: {x: a *}\n", "t.yaml:8:20: routes[0].project.x: the expression ends too early"},
		{"non-ascii before", "    when: 'é == 1 &&'\n", "t.yaml:8:20: routes[0].when: the expression ends too early"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("t.yaml", []byte(head+tt.when))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestExplicitZeros: 0 means "not set" inside Config, so a written 0 is
// refused instead of silently becoming the default.
func TestExplicitZeros(t *testing.T) {
	const head = "application_id: a\ninputs: [{topic: in}]\nrouting: {default: r}\nroutes: [{name: r, topic: out}]\n"
	tests := []struct{ extra, want string }{
		{"dirty: {topic: d, truncate_to: 0}\n", "t.yaml:5:32: dirty.truncate_to must not be 0; remove it to get the default (65536)"},
		{"dirty: {topic: d, max_record_bytes: 0x0}\n", "t.yaml:5:37: dirty.max_record_bytes must not be 0; remove it to get the default (1000000)"},
		{"dirty: {topic: d}\ncommit_records: 0\n", "t.yaml:6:17: commit_records must not be 0; remove it to get the default (50000)"},
		{"dirty: {topic: d}\ntopics: {partitions: ~}\n", ""}, // null is "not set"
	}
	for _, tt := range tests {
		_, err := Load("t.yaml", []byte(head+tt.extra))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%q:\n got %s\nwant %s", tt.extra, got, tt.want)
		}
	}
}
