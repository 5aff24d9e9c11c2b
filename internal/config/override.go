package config

import (
	"errors"
	"fmt"
	"strings"
)

// overrideCheck gathers the problems of one section (security, api) once
// its environment overrides are applied, remembering which values came
// from the environment: a problem with a value from the file points at
// FILE:LINE:COL, one with a value from a variable names the variable.
type overrideCheck struct {
	c       *Config
	section string            // "security", "api": the file's section
	env     map[string]string // setting path -> its variable
	fromEnv map[string]bool
	probs   []string
}

func newOverrideCheck(c *Config, section string, env map[string]string) *overrideCheck {
	return &overrideCheck{c: c, section: section, env: env, fromEnv: map[string]bool{}}
}

// name is how a message names the setting at path: its variable when the
// value came from the environment.
func (k *overrideCheck) name(path string) string {
	if k.fromEnv[path] {
		return k.env[path]
	}
	return path
}

// either names a setting that is missing: it may be set in both places.
func (k *overrideCheck) either(path string) string { return path + " (or " + k.env[path] + ")" }

// problem adds a message as it is (an override's own check names its
// variable).
func (k *overrideCheck) problem(format string, args ...any) {
	k.probs = append(k.probs, fmt.Sprintf(format, args...))
}

// report adds a problem about the setting at path, positioned in the file
// when its value (or its section) comes from there.
func (k *overrideCheck) report(path, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c := k.c; c.src != nil && !k.fromEnv[path] && c.src.has(k.section) {
		d := doc{file: c.src.file, pos: c.src.pos}
		msg = Problem{File: d.file, Pos: d.lookup(path), Msg: msg}.String()
	}
	k.probs = append(k.probs, msg)
}

// fileHas: the file holds the setting's section at path.
func (k *overrideCheck) fileHas(path string) bool { return k.c.src != nil && k.c.src.has(path) }

func (k *overrideCheck) err() error {
	if len(k.probs) == 0 {
		return nil
	}
	return errors.New(strings.Join(k.probs, "\n"))
}
