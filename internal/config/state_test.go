package config

import (
	"strings"
	"testing"
)

// TestStateSection: the default, the file, the environment overriding
// it, and every error pointing at where its value came from.
func TestStateSection(t *testing.T) {
	const brokers = "brokers: [f:9092]\n"
	tests := []struct {
		name      string
		file      string
		o         Overrides
		wantStore StoreKind
		wantDir   string
		wantErr   string
	}{
		{name: "memory by default", file: brokers, wantStore: StoreMemory},
		{name: "pebble from the file", file: brokers + "state: {store: pebble, dir: /var/lib/ss}\n", wantStore: StorePebble, wantDir: "/var/lib/ss"},
		{name: "env picks pebble and its dir", file: brokers, o: Overrides{StateStore: " Pebble ", StateDir: "/data"}, wantStore: StorePebble, wantDir: "/data"},
		{name: "env dir for the file's pebble", file: brokers + "state: {store: pebble}\n", o: Overrides{StateDir: "/data"}, wantStore: StorePebble, wantDir: "/data"},
		{name: "env memory wins over the file's pebble", file: brokers + "state: {store: pebble, dir: /x}\n", o: Overrides{StateStore: "memory"}, wantStore: StoreMemory},
		{name: "file pebble without dir", file: brokers + "state:\n  store: pebble\n", wantErr: "t.yaml:10:10: state.store: pebble needs state.dir (or SIDESTREAM_STATE_DIR)"},
		{name: "env pebble without dir", file: brokers, o: Overrides{StateStore: "pebble"}, wantErr: "SIDESTREAM_STATE_STORE=pebble needs SIDESTREAM_STATE_DIR"},
		{name: "env bad store", file: brokers, o: Overrides{StateStore: "rocksdb"}, wantErr: `SIDESTREAM_STATE_STORE must be "memory" or "pebble", got "rocksdb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, minimalYAML+tt.file)
			err := cfg.Apply(tt.o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Apply error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.State.Store != tt.wantStore || cfg.State.Dir != tt.wantDir {
				t.Fatalf("state = %+v, want %s %q", cfg.State, tt.wantStore, tt.wantDir)
			}
		})
	}
	env := OverridesFromEnv(func(k string) string {
		return map[string]string{EnvStateStore: "pebble", EnvStateDir: "/d"}[k]
	})
	if env.StateStore != "pebble" || env.StateDir != "/d" {
		t.Fatalf("from env: %+v", env)
	}
	if m := env.Merge(Overrides{StateDir: "/flag"}); m.StateDir != "/flag" || m.StateStore != "pebble" {
		t.Fatalf("merge: %+v", m)
	}
}

// TestOnChangelogLoss: fail unless the file says start_empty; any other
// value is refused at its position.
func TestOnChangelogLoss(t *testing.T) {
	const brokers = "brokers: [f:9092]\n"
	if cfg := mustLoad(t, minimalYAML+brokers); cfg.State.StartEmptyOnLoss() {
		t.Fatal("the default must be fail")
	}
	if cfg := mustLoad(t, minimalYAML+brokers+"state: {on_changelog_loss: fail}\n"); cfg.State.StartEmptyOnLoss() {
		t.Fatal("fail must not start empty")
	}
	if cfg := mustLoad(t, minimalYAML+brokers+"state: {on_changelog_loss: start_empty}\n"); !cfg.State.StartEmptyOnLoss() {
		t.Fatal("start_empty must start empty")
	}
	cfg := mustLoad(t, minimalYAML+brokers)
	if err := cfg.Apply(OverridesFromEnv(func(k string) string {
		return map[string]string{EnvOnChangelogLoss: " Start_Empty "}[k]
	})); err != nil || !cfg.State.StartEmptyOnLoss() {
		t.Fatalf("from the environment: %v %q", err, cfg.State.OnChangelogLoss)
	}
	if err := mustLoad(t, minimalYAML+brokers).Apply(Overrides{OnChangelogLoss: "never"}); err == nil ||
		!strings.Contains(err.Error(), EnvOnChangelogLoss+` must be "fail" or "start_empty", got "never"`) {
		t.Fatalf("bad environment value: %v", err)
	}
	_, err := Load("t.yaml", []byte(minimalYAML+brokers+"state:\n  on_changelog_loss: ignore\n"))
	if err == nil || !strings.Contains(err.Error(), `t.yaml:10:22: state.on_changelog_loss must be "fail" or "start_empty", got "ignore"`) {
		t.Fatalf("error = %v", err)
	}
}
