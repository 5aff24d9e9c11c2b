package config

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Assembly TTL clocks and duplicate modes.
const (
	ClockProcessing = "processing"
	ClockEvent      = "event"
	LastWins        = "last_wins"
	FirstWins       = "first_wins"
)

// Assemble configures an assembly route: parts of one record, arriving
// separately from routes of this topology or from input topics, joined by
// a shared ID. The route's topic receives one assembled record per ID when
// the completion rule holds; the incomplete route receives what was held
// when the TTL passes first.
type Assemble struct {
	// ID is the ID expression of every part that does not set its own.
	ID string `yaml:"id"`
	// Parts, in the order of the assembled value.
	Parts []AssemblePart `yaml:"parts"`
	// CompleteWhen lists the parts that are enough (default: all).
	CompleteWhen []string `yaml:"complete_when"`
	// TTL is how long an assembly stays open after its first part.
	TTL Duration `yaml:"ttl"`
	// Time is the TTL's clock: processing (wall clock, the default) or
	// event (the records' event time; deterministic).
	Time string `yaml:"time"`
	// Duplicates is last_wins (default) or first_wins.
	Duplicates string `yaml:"duplicates"`
	// Retention is how long a completed ID is remembered: its later parts
	// go to DuplicateTopic instead of opening a new assembly (default 0).
	Retention Span `yaml:"retention"`
	// IncompleteTopic receives assemblies whose TTL passed.
	IncompleteTopic string `yaml:"incomplete_topic"`
	// DuplicateTopic receives parts of IDs completed within the
	// retention (required when retention is set).
	DuplicateTopic string `yaml:"duplicate_topic"`
	// Limits bound each task's open assemblies (default: no bound).
	Limits *Limits `yaml:"limits"`
	// Repartition false says the input is already partitioned by the
	// assembly ID (Kafka's default murmur2 key hash, the same partition
	// count on every input): the assembly then runs in the input
	// partition's own task, with no repartition topic. A part whose ID
	// belongs to another partition goes to dirty. Default true.
	Repartition *bool `yaml:"repartition"`
}

// AssemblePart is one part of an assembly.
type AssemblePart struct {
	Name string `yaml:"name"`
	// Source is a route of this topology (the part is what the route
	// writes) or an input topic (every record of it).
	Source string `yaml:"source"`
	// When is an optional predicate on the source's records.
	When string `yaml:"when"`
	// ID overrides the assembly's ID expression for this part.
	ID string `yaml:"id"`
	// Project transforms the part's value (default: the source route's
	// output, or the input record).
	Project Projection `yaml:"project"`
}

func (a *Assemble) applyDefaults() {
	if a.Time == "" {
		a.Time = ClockProcessing
	}
	if a.Duplicates == "" {
		a.Duplicates = LastWins
	}
}

// validateAssembly checks an assembly route. Its topic receives assembled
// records, so when, key, value and project do not apply.
func (d *doc) validateAssembly(p string, r Route, routes []Route, useTopic useTopicFunc) {
	a := r.Assemble
	ap := p + ".assemble"
	if r.When != "" {
		d.at(p+".when", "%s.when does not apply to an assembly route: each part has its own when", p)
	}
	if r.Key != "" {
		d.at(p+".key", "%s.key does not apply to an assembly route: assembled records are keyed by their ID", p)
	}
	if len(r.Project) > 0 || r.Value == ValueProjection {
		d.at(p+".project", "%s: an assembly route writes assembled records; value and project do not apply (project each part instead)", p)
	}
	if r.Window != nil {
		d.at(ap, "%s: a route is either a window or an assembly, not both", p)
	}
	if a.ID != "" {
		d.checkExpr(ap+".id", a.ID, false)
	}
	inputs := map[string]bool{}
	for _, in := range d.cfg.Inputs {
		inputs[in.Topic] = true
	}
	byName := map[string]Route{}
	for _, o := range routes {
		byName[o.Name] = o
	}
	if len(a.Parts) == 0 {
		d.at(ap, "%s.parts: at least one part is required (name and source)", ap)
	}
	seen := map[string]bool{}
	for i, part := range a.Parts {
		pp := fmt.Sprintf("%s.parts[%d]", ap, i)
		d.validatePartSource(pp, r, part, seen, byName, inputs, routes)
		d.validatePartExprs(pp, ap, a, part)
	}
	d.validateAssemblySettings(ap, r, seen, useTopic)
}

// validatePartSource checks a part's name (seen holds the names before it)
// and that its source is a plain route or an input topic.
func (d *doc) validatePartSource(pp string, r Route, part AssemblePart, seen map[string]bool, byName map[string]Route, inputs map[string]bool, routes []Route) {
	switch {
	case part.Name == "":
		d.at(pp, "%s.name is required", pp)
	case !routeNameRe.MatchString(part.Name):
		d.at(pp+".name", "part name %q must start with a lower-case letter and hold only a-z, 0-9, '_' and '-'", part.Name)
	case seen[part.Name]:
		d.at(pp+".name", "duplicate part name %q", part.Name)
	}
	seen[part.Name] = true
	src, isRoute := byName[part.Source]
	switch {
	case part.Source == "":
		d.at(pp, "%s.source is required: a route of this topology or an input topic", pp)
	case isRoute && inputs[part.Source]:
		d.at(pp+".source", "%s.source %q names both a route and an input topic; rename the route", pp, part.Source)
	case isRoute && src.Name == r.Name:
		d.at(pp+".source", "%s.source %q is this assembly itself", pp, part.Source)
	case isRoute && src.Assemble != nil:
		d.at(pp+".source", "%s.source %q is an assembly route; a part comes from a plain route or an input topic", pp, part.Source)
	case isRoute && src.Window != nil:
		d.at(pp+".source", "%s.source %q is a window route; a part comes from a plain route or an input topic", pp, part.Source)
	case !isRoute && !inputs[part.Source]:
		var known []string
		for _, o := range routes {
			if o.Assemble == nil && o.Window == nil && o.Name != "" {
				known = append(known, o.Name)
			}
		}
		known = append(known, slices.Sorted(mapKeys(inputs))...)
		d.at(pp+".source", "%s.source %q is neither a route nor an input topic (known: %s)", pp, part.Source, strings.Join(known, ", "))
	}
}

// validatePartExprs checks a part's when, id and projection.
func (d *doc) validatePartExprs(pp, ap string, a *Assemble, part AssemblePart) {
	if part.When != "" {
		d.checkExpr(pp+".when", part.When, true)
	}
	switch {
	case part.ID != "":
		d.checkExpr(pp+".id", part.ID, false)
	case a.ID == "":
		d.at(pp, "%s: no ID expression: set %s.id (or this part's id)", pp, ap)
	}
	for _, f := range part.Project {
		d.checkExpr(fieldPath(pp+".project", f.Name), f.Expr, false)
	}
}

// validateAssemblySettings checks complete_when against the part names
// and the assembly's clock, TTL, duplicates and side topics.
func (d *doc) validateAssemblySettings(ap string, r Route, seen map[string]bool, useTopic useTopicFunc) {
	a := r.Assemble
	req := map[string]bool{}
	for i, n := range a.CompleteWhen {
		cp := fmt.Sprintf("%s.complete_when[%d]", ap, i)
		switch {
		case !seen[n] || n == "":
			d.at(cp, "%s: %q is not a part of this assembly", cp, n)
		case req[n]:
			d.at(cp, "%s: part %q is listed twice", cp, n)
		}
		req[n] = true
	}
	if a.TTL == 0 {
		d.at(ap, "%s.ttl is required: how long an assembly waits for its parts before it goes to the incomplete route", ap)
	}
	if a.TTL.D()%time.Millisecond != 0 {
		d.at(ap+".ttl", "%s.ttl must be a whole number of milliseconds, got %s", ap, a.TTL.D())
	}
	if a.Retention.D()%time.Millisecond != 0 {
		d.at(ap+".retention", "%s.retention must be a whole number of milliseconds, got %s", ap, a.Retention.D())
	}
	if a.Time != ClockProcessing && a.Time != ClockEvent {
		d.at(ap+".time", "%s.time must be %q or %q, got %q", ap, ClockProcessing, ClockEvent, a.Time)
	}
	if a.Duplicates != LastWins && a.Duplicates != FirstWins {
		d.at(ap+".duplicates", "%s.duplicates must be %q or %q, got %q", ap, LastWins, FirstWins, a.Duplicates)
	}
	if a.IncompleteTopic == "" {
		d.at(ap, "%s.incomplete_topic is required: assemblies whose TTL passes go there, never silently away", ap)
	}
	useTopic(ap+".incomplete_topic", fmt.Sprintf("the incomplete route of %q", r.Name), false, a.IncompleteTopic)
	switch {
	case a.Retention > 0 && a.DuplicateTopic == "":
		d.at(ap, "%s.duplicate_topic is required with a retention: parts of completed IDs go there", ap)
	case a.Retention == 0 && a.DuplicateTopic != "":
		d.at(ap+".duplicate_topic", "%s.duplicate_topic is never written without a retention; set retention or remove it", ap)
	}
	useTopic(ap+".duplicate_topic", fmt.Sprintf("the duplicate route of %q", r.Name), false, a.DuplicateTopic)
	d.validateLimits(ap, r.Name, a.Limits, 1, "the incomplete route", useTopic)
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
