package config

import (
	"fmt"
	"strings"
)

// StoreKind names the backend of operator state (windows).
type StoreKind string

const (
	// StoreMemory keeps state in memory and restores it fully from the
	// changelog on every assignment (the default).
	StoreMemory StoreKind = "memory"
	// StorePebble keeps state on disk under State.Dir with a local
	// checkpoint, so a restart restores only the changelog's tail.
	StorePebble StoreKind = "pebble"
)

// State configures where stateful operators keep their state. The
// changelog topics stay the source of truth either way.
type State struct {
	Store StoreKind `yaml:"store"`
	// Dir holds one directory per changelog partition (store: pebble).
	// It must not be shared by two running instances.
	Dir string `yaml:"dir"`
	// OnChangelogLoss says what a stateful task does when its changelog
	// no longer holds the state it must restore (records deleted, topic
	// deleted or recreated, a local checkpoint outside the partition):
	// fail (the default, also when empty) keeps the task from processing
	// and reports it; start_empty starts it with what the changelog still
	// holds, logged at WARN and counted.
	OnChangelogLoss ChangelogLoss `yaml:"on_changelog_loss"`
}

// ChangelogLoss is the state.on_changelog_loss setting.
type ChangelogLoss string

const (
	ChangelogLossFail       ChangelogLoss = "fail"
	ChangelogLossStartEmpty ChangelogLoss = "start_empty"
)

// StartEmptyOnLoss reports whether state.on_changelog_loss allows a task
// to start without the state its changelog lost.
func (s State) StartEmptyOnLoss() bool { return s.OnChangelogLoss == ChangelogLossStartEmpty }

// The environment variables of the state settings.
const (
	EnvStateStore = "SIDESTREAM_STATE_STORE"
	EnvStateDir   = "SIDESTREAM_STATE_DIR"
	// EnvOnChangelogLoss overrides state.on_changelog_loss, so one
	// rollout can accept a loss without editing the topology.
	EnvOnChangelogLoss = "SIDESTREAM_STATE_ON_CHANGELOG_LOSS"
)

// validateState checks the state section as the file gives it. Whether
// pebble has its directory is checked by Apply: the environment may set it.
func (d *doc) validateState() {
	if s := d.cfg.State.Store; s != StoreMemory && s != StorePebble {
		d.at("state.store", "state.store must be %q or %q, got %q", StoreMemory, StorePebble, s)
	}
	if l := d.cfg.State.OnChangelogLoss; l != "" && l != ChangelogLossFail && l != ChangelogLossStartEmpty {
		d.at("state.on_changelog_loss", "state.on_changelog_loss must be %q or %q, got %q", ChangelogLossFail, ChangelogLossStartEmpty, l)
	}
}

// applyState sets the state overrides from the environment and checks the
// result: a problem with a value from the file points at FILE:LINE:COL,
// one from the environment names the variable.
func (c *Config) applyState(store, dir string) error {
	fromEnv := map[string]bool{}
	if store = strings.TrimSpace(store); store != "" {
		k := StoreKind(strings.ToLower(store))
		if k != StoreMemory && k != StorePebble {
			return fmt.Errorf("%s must be %q or %q, got %q", EnvStateStore, StoreMemory, StorePebble, store)
		}
		c.State.Store, fromEnv["store"] = k, true
	}
	if dir != "" {
		c.State.Dir, fromEnv["dir"] = dir, true
	}
	if c.State.Store == StorePebble && strings.TrimSpace(c.State.Dir) == "" {
		msg := fmt.Sprintf("state.store: pebble needs state.dir (or %s), the directory of the local stores", EnvStateDir)
		if fromEnv["store"] {
			return fmt.Errorf("%s=pebble needs %s (or state.dir in the file)", EnvStateStore, EnvStateDir)
		}
		if c.src != nil {
			d := doc{file: c.src.file, pos: c.src.pos}
			msg = Problem{File: d.file, Pos: d.lookup("state.store"), Msg: msg}.String()
		}
		return fmt.Errorf("%s", msg)
	}
	if c.State.Store == StoreMemory && fromEnv["store"] {
		c.State.Dir = "" // a directory for the pebble store stays unused
	}
	return nil
}

// applyOnChangelogLoss sets state.on_changelog_loss from the environment.
func (c *Config) applyOnChangelogLoss(v string) error {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" {
		return nil
	}
	if l := ChangelogLoss(v); l != ChangelogLossFail && l != ChangelogLossStartEmpty {
		return fmt.Errorf("%s must be %q or %q, got %q", EnvOnChangelogLoss, ChangelogLossFail, ChangelogLossStartEmpty, v)
	}
	c.State.OnChangelogLoss = ChangelogLoss(v)
	return nil
}
