package topology

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Topology is a compiled, validated config: what the runtime executes.
type Topology struct {
	Config    *Config
	Inputs    []*InputNode
	EventTime EventTime
	Match     Match
	Routes    []*RouteNode
	// Default is the route for unmatched records; nil means drop them.
	Default *RouteNode
	Dirty   Dirty
	// Fields is every top-level JSON field any expression reads, sorted.
	Fields []string
}

// InputNode is a compiled input.
type InputNode struct {
	Topic  string
	Format string
	Schema *jsonschema.Schema // nil when none
	// SchemaPath is the schema file as written in the config ("" for
	// none), for describing the topology.
	SchemaPath string
}

// RouteNode is a compiled route.
type RouteNode struct {
	Name    string
	Topic   string
	When    *Expr // nil: always
	Key     *Expr // nil: keep the input key
	Value   string
	Project []ProjectedField
	// Window is set on window routes.
	Window *WindowNode
}

// WindowNode is a compiled window route. Matching records are written to
// RepartitionTopic keyed by the group key (stage one, in the same
// transaction), then aggregated by the task that owns that partition of the
// repartition topic (stage two), whose state goes to ChangelogTopic.
type WindowNode struct {
	Config           Window
	GroupBy          *Expr // nil: the input key
	Aggregates       []CompiledAggregate
	RepartitionTopic string
	ChangelogTopic   string
}

// CompiledAggregate is one compiled aggregation.
type CompiledAggregate struct {
	Name string
	Fn   string
	Of   *Expr // nil for a bare count
}

// ProjectedField is one compiled output field of a projection.
type ProjectedField struct {
	Name string
	Expr *Expr
}

// Compile turns a loaded config into a Topology. cfg must come from Load
// (it is validated there); dir resolves relative schema paths.
func Compile(cfg *Config, dir string) (*Topology, error) {
	t := &Topology{Config: cfg, EventTime: cfg.EventTime, Match: cfg.Routing.Match, Dirty: cfg.Dirty}
	fields := map[string]bool{}
	add := func(e *Expr) {
		for _, f := range e.Fields {
			fields[f] = true
		}
	}
	for _, in := range cfg.Inputs {
		n := &InputNode{Topic: in.Topic, Format: in.Format, SchemaPath: in.Schema}
		if in.Schema != "" {
			s, err := loadSchema(dir, in.Schema)
			if err != nil {
				return nil, fmt.Errorf("input %q: %w", in.Topic, err)
			}
			n.Schema = s
		}
		t.Inputs = append(t.Inputs, n)
	}
	for _, r := range cfg.Routes {
		rn := &RouteNode{Name: r.Name, Topic: r.Topic, Value: r.Value}
		var err error
		if r.When != "" {
			if rn.When, err = CompileExpr(r.When, true); err != nil {
				return nil, fmt.Errorf("route %q when: %w", r.Name, err)
			}
			add(rn.When)
		}
		if r.Key != "" {
			if rn.Key, err = CompileExpr(r.Key, false); err != nil {
				return nil, fmt.Errorf("route %q key: %w", r.Name, err)
			}
			add(rn.Key)
		}
		for _, f := range r.Project {
			e, err := CompileExpr(f.Expr, false)
			if err != nil {
				return nil, fmt.Errorf("route %q project %q: %w", r.Name, f.Name, err)
			}
			add(e)
			rn.Project = append(rn.Project, ProjectedField{Name: f.Name, Expr: e})
		}
		if w := r.Window; w != nil {
			wn := &WindowNode{
				Config:           *w,
				RepartitionTopic: cfg.ApplicationID + "-" + r.Name + "-repartition",
				ChangelogTopic:   cfg.ApplicationID + "-" + r.Name + "-changelog",
			}
			if w.GroupBy != "" {
				if wn.GroupBy, err = CompileExpr(w.GroupBy, false); err != nil {
					return nil, fmt.Errorf("route %q group_by: %w", r.Name, err)
				}
				add(wn.GroupBy)
			}
			for _, a := range w.Aggregates {
				ca := CompiledAggregate{Name: a.Name, Fn: a.Fn}
				if a.Of != "" {
					if ca.Of, err = CompileExpr(a.Of, false); err != nil {
						return nil, fmt.Errorf("route %q aggregate %q: %w", r.Name, a.Name, err)
					}
					add(ca.Of)
				}
				wn.Aggregates = append(wn.Aggregates, ca)
			}
			rn.Window = wn
		}
		t.Routes = append(t.Routes, rn)
		if r.Name == cfg.Routing.Default {
			t.Default = rn
		}
	}
	for f := range fields {
		t.Fields = append(t.Fields, f)
	}
	sort.Strings(t.Fields)
	return t, nil
}

// Route returns the route named name, or nil.
func (t *Topology) Route(name string) *RouteNode {
	for _, r := range t.Routes {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// OutputTopics lists every topic the topology writes, dirty included.
func (t *Topology) OutputTopics() []string {
	var out []string
	for _, r := range t.Routes {
		out = append(out, r.Topic)
		if r.Window != nil {
			out = append(out, r.Window.Config.LateTopic)
		}
	}
	return append(out, t.Dirty.Topic)
}

// Windows lists the window routes.
func (t *Topology) Windows() []*RouteNode {
	var out []*RouteNode
	for _, r := range t.Routes {
		if r.Window != nil {
			out = append(out, r)
		}
	}
	return out
}

// InternalTopics lists the repartition and changelog topics, which the
// router creates and owns.
func (t *Topology) InternalTopics() (repartition, changelog []string) {
	for _, r := range t.Windows() {
		repartition = append(repartition, r.Window.RepartitionTopic)
		changelog = append(changelog, r.Window.ChangelogTopic)
	}
	return repartition, changelog
}

// InputTopics lists the input topic names.
func (t *Topology) InputTopics() []string {
	var out []string
	for _, in := range t.Inputs {
		out = append(out, in.Topic)
	}
	return out
}

// Overrides are values from the environment or flags that win over the
// file. Empty fields leave the file's value.
type Overrides struct {
	Brokers        []string
	ApplicationID  string
	Guarantee      string
	CommitInterval string
}

// OverridesFromEnv reads SIDESTREAM_BROKERS (comma-separated),
// SIDESTREAM_APPLICATION_ID, SIDESTREAM_GUARANTEE and
// SIDESTREAM_COMMIT_INTERVAL.
func OverridesFromEnv(getenv func(string) string) Overrides {
	var o Overrides
	if b := getenv("SIDESTREAM_BROKERS"); b != "" {
		o.Brokers = splitList(b)
	}
	o.ApplicationID = getenv("SIDESTREAM_APPLICATION_ID")
	o.Guarantee = getenv("SIDESTREAM_GUARANTEE")
	o.CommitInterval = getenv("SIDESTREAM_COMMIT_INTERVAL")
	return o
}

// Merge returns o with every field that p sets replaced by p's.
func (o Overrides) Merge(p Overrides) Overrides {
	if len(p.Brokers) > 0 {
		o.Brokers = p.Brokers
	}
	if p.ApplicationID != "" {
		o.ApplicationID = p.ApplicationID
	}
	if p.Guarantee != "" {
		o.Guarantee = p.Guarantee
	}
	if p.CommitInterval != "" {
		o.CommitInterval = p.CommitInterval
	}
	return o
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Apply sets the overrides on cfg and checks the values it sets.
func (c *Config) Apply(o Overrides) error {
	if len(o.Brokers) > 0 {
		for _, b := range o.Brokers {
			if err := checkBroker(b); err != nil {
				return err
			}
		}
		c.Brokers = o.Brokers
	}
	if o.ApplicationID != "" {
		if !appIDRe.MatchString(o.ApplicationID) {
			return fmt.Errorf("application id %q may hold only letters, digits, '.', '_' and '-'", o.ApplicationID)
		}
		c.ApplicationID = o.ApplicationID
	}
	if o.Guarantee != "" {
		g := Guarantee(o.Guarantee)
		if g != ExactlyOnce && g != AtLeastOnce {
			return fmt.Errorf("guarantee must be %q or %q, got %q", ExactlyOnce, AtLeastOnce, o.Guarantee)
		}
		c.Guarantee = g
	}
	if o.CommitInterval != "" {
		d, err := time.ParseDuration(o.CommitInterval)
		if err != nil || d <= 0 {
			return fmt.Errorf("commit interval %q is not a positive duration", o.CommitInterval)
		}
		c.CommitInterval = Duration(d)
	}
	if len(c.Brokers) == 0 {
		return ErrNoBrokers
	}
	return nil
}

// Open loads, validates and compiles a topology file.
func Open(path string) (*Topology, error) {
	cfg, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	return Compile(cfg, dirOf(path))
}
