package plan

import (
	"reflect"
	"slices"
	"strings"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/objective"
)

// What a hot reload applies. A running router swaps its stage one (the
// routes' predicates, keys, projections, formats and topics) at a
// transaction boundary; everything else it built when it started stays:
// the client (brokers, security, guarantee, the inputs it subscribed),
// stage two (the window and assembly tasks, their outputs, the dirty
// records they write) and the process settings. So a reload applies only
// when every change is live and falls in stage one; ReloadRefusals names
// the others, each with why.

// Notes of the changes a reload refuses.
const (
	noteRestart   = "read when the router starts: restart to apply it (a reload keeps the running value)"
	noteStageTwo  = "a window's or assembly's outputs and settings are stage two's, built when the router starts: restart to apply it (a reload may change only its when)"
	noteInputs    = "the inputs are the consumer's subscription and decoders, built when the router starts: restart to apply it (a reload may change only an input's schema)"
	noteNotLive   = "not live: "
	noteDirtyTwo  = "stage two writes dirty records too, with the settings the router started with: restart to apply it"
	noteNewState  = "a new state cannot start in a running router: restart to apply it"
	noteBreaking  = "breaking: the running version goes on; see `router plan` for the remedies"
	noteRemovedSt = "a removed window or assembly keeps running in stage two until the router restarts: restart to apply it"
	noteObjective = "a route's objectives (slo) are judged by the guard built when the router starts: restart to apply it"
)

// stageOneSections are the top-level sections a reload applies (routes
// are judged one by one, inputs by their fields).
var stageOneSections = map[string]bool{"event_time": true, "routing": true}

// ReloadRefusals lists the changes of Diff(old, new) that a running
// router cannot apply, each with its Note saying why, plus the settings
// Diff does not compare (brokers, security, api ...) that differ. None:
// the reload applies. Settings refusals carry no values (secrets).
func ReloadRefusals(old, new *Plan, changes []Change) []Change {
	var out []Change
	reported := map[string]bool{}
	for _, c := range changes {
		reported[strings.SplitN(c.Path, ".", 2)[0]] = true
		if r, ok := refusal(old, new, c); ok {
			out = append(out, r)
		}
	}
	return append(out, settingsRefusals(old.src, new.src, reported)...)
}

// refusal says whether one change of Diff is refused, and how it reads.
func refusal(old, new *Plan, c Change) (Change, bool) {
	switch {
	case c.Class == Breaking:
		c.Note = noteBreaking + ": " + c.Note
		return c, true
	case c.Class == NewState:
		c.Note = noteNewState + " (" + c.Note + ")"
		return c, true
	case c.Class != Live:
		c.Note = noteNotLive + c.Note
		return c, true
	case c.Route != "":
		return routeRefusal(old, new, c)
	case c.Path == "inputs":
		if inputsSchemaOnly(old.src.Inputs, new.src.Inputs) {
			return c, false
		}
		c.Note = noteInputs
		return c, true
	case c.Path == "dirty":
		c.Note = noteDirtyTwo
		return c, true
	case stageOneSections[c.Path]:
		return c, false
	}
	c.Note = noteRestart
	return c, true
}

// routeRefusal: a stateless route changes freely but for its objectives
// (the guard is the processor's, built at start); a window or assembly
// route only in its when (stage one's predicate).
func routeRefusal(old, new *Plan, c Change) (Change, bool) {
	if !slices.Equal(old.routeObjectives(c.Route), new.routeObjectives(c.Route)) {
		c.Note = noteObjective
		return c, true
	}
	o, n := old.Route(c.Route), new.Route(c.Route)
	if (o == nil || !stateful(o)) && (n == nil || !stateful(n)) {
		return c, false
	}
	if n == nil {
		c.Note = noteRemovedSt
		return c, true
	}
	if o != nil && c.Path == "routes["+c.Route+"].when" {
		return c, false
	}
	c.Note = noteStageTwo
	return c, true
}

// routeObjectives are the objectives of the route named name.
func (t *Plan) routeObjectives(name string) []objective.Spec {
	var out []objective.Spec
	for _, o := range t.Objectives {
		if o.Route == name {
			out = append(out, o)
		}
	}
	return out
}

// inputsSchemaOnly says whether two input lists differ at most in their
// JSON Schema files (stage one's validators).
func inputsSchemaOnly(o, n []config.Input) bool {
	if len(o) != len(n) {
		return false
	}
	for i := range o {
		a, b := o[i], n[i]
		a.Schema, b.Schema = "", ""
		if !reflect.DeepEqual(a, b) {
			return false
		}
	}
	return true
}

// settingsRefusals compares the top-level sections Diff does not
// (brokers, security, api, shutdown_timeout ...): any difference needs a
// restart. reported are the sections Diff already named.
func settingsRefusals(o, n *config.Config, reported map[string]bool) []Change {
	var out []Change
	ov, nv := reflect.ValueOf(o).Elem(), reflect.ValueOf(n).Elem()
	for i := 0; i < ov.NumField(); i++ {
		f := ov.Type().Field(i)
		name := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if !f.IsExported() || name == "" || name == "-" || name == "routes" || reported[name] {
			continue
		}
		if !reflect.DeepEqual(ov.Field(i).Interface(), nv.Field(i).Interface()) {
			out = append(out, Change{Path: name, Class: Live, Note: noteRestart})
		}
	}
	return out
}
