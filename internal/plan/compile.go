package plan

import (
	"fmt"
	"sort"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/objective"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Plan is a compiled, validated config: what the runtime executes. It is
// built once by Compile and never changed after; the runtime and both
// stages read it and never the YAML model (.golangci.yml, plan-only).
type Plan struct {
	// Settings are the sections the runtime reads as written, after
	// defaults and overrides.
	Settings Settings
	// Version is the content fingerprint of the whole plan (Fingerprint).
	Version   string
	Inputs    []*InputNode
	EventTime config.EventTime
	Match     config.Match
	Routes    []*RouteNode
	// Default is the route for unmatched records; nil means drop them.
	Default *RouteNode
	Dirty   config.Dirty
	// Fields is every top-level JSON field any expression reads, sorted.
	Fields []string
	// Meta is every metadata variable any expression reads, sorted.
	Meta []string
	// Objectives are the slo blocks of the dirty route and the routes
	// (objectives.go).
	Objectives []objective.Spec

	// Tables are the lookup tables, in config order.
	Tables []*TableNode

	fns    config.Functions // the embedding program's functions, compiled in
	tables *tableBinding    // what lookup() reads (BindTables)
	src    *config.Config   // the model it was compiled from, for Diff
}

// InputNode is a compiled input.
type InputNode struct {
	Topic  string
	Format string
	Schema *jsonschema.Schema // nil when none
	// SchemaPath is the schema file as written in the config ("" for
	// none), for describing the topology.
	SchemaPath string
	// Start is where a new group starts on it (earliest, latest); OnGap
	// what a gap does (skip, fail).
	Start, OnGap string
}

// Settings are the config sections the runtime reads, copied when the
// plan is compiled: the runtime never holds the *config.Config.
type Settings struct {
	ApplicationID     string
	Brokers           []string
	Guarantee         config.Guarantee
	CommitInterval    config.Duration
	CommitRecords     int
	CommitWhenDrained bool
	Topics            config.TopicDefaults
	Shutdown          config.Duration
	Security          config.Security
	State             config.State
	Client            config.Client
	API               config.API
	SchemaRegistry    config.SchemaRegistry
	// Tracing is the tracing section (spans; the contexts travel
	// without it).
	Tracing config.Tracing
	// Limits bound the records of every output but dirty (its topic's
	// max.message.bytes, read at start, bounds them too).
	Limits config.OutputLimits
}

// ExactlyOnce says whether the plan runs under exactly_once.
func (s Settings) ExactlyOnce() bool { return s.Guarantee == config.ExactlyOnce }

func settingsOf(c *config.Config) Settings {
	return Settings{
		ApplicationID: c.ApplicationID, Brokers: c.Brokers, Guarantee: c.Guarantee,
		CommitInterval: c.CommitInterval, CommitRecords: c.CommitRecords,
		CommitWhenDrained: c.CommitWhenDrained != nil && *c.CommitWhenDrained,
		Topics:            c.Topics, Shutdown: c.Shutdown, Security: c.Security, State: c.State,
		Client: c.Client, API: c.API, SchemaRegistry: c.SchemaRegistry, Limits: c.Limits,
		Tracing: c.Tracing,
	}
}

// RouteNode is a compiled route.
type RouteNode struct {
	Name string
	// Topic is the route's topic; "" when TopicFrom computes it.
	Topic string
	// TopicFrom is set on a route whose topic is computed per record.
	TopicFrom *TopicFromNode
	When      *config.Expr // nil: always
	Key       *config.Expr // nil: keep the input key
	Value     string
	Project   []ProjectedField
	// Window is set on window routes.
	Window *WindowNode
	// Format is raw, json, connect-json or avro.
	Format string
	// Connect is the schema of a connect-json route, nil otherwise.
	Connect *config.ConnectSchema
	// Avro is the record schema of an avro route, nil otherwise.
	Avro *config.AvroSchema
	// Assembly is set on assembly routes.
	Assembly *AssemblyNode
	// ForwardTombstones: input tombstones are written to Topic as they
	// came (tombstones: forward).
	ForwardTombstones bool
	// TopicConfigs override topics.configs for Topic when it is created.
	TopicConfigs config.TopicConfigs
	// Rules is the fingerprint of the route as written: a change to its
	// predicate, key, projection, format or state changes it.
	Rules string
	// StateVersion is a window or assembly route's state_version: its
	// internal topics' names carry it (stateTopic) and each result names
	// it in a header (0: neither).
	StateVersion int

	src config.Route // the route as written, for Diff
}

// WindowNode is a compiled window route. Matching records are written to
// RepartitionTopic keyed by the group key (stage one, in the same
// transaction), then aggregated by the task that owns that partition of the
// repartition topic (stage two), whose state goes to ChangelogTopic.
type WindowNode struct {
	// Spec is the window section as written (defaults applied).
	Spec config.Window
	// State is the fingerprint of what its stored state depends on (type,
	// size, advance, gap, grace, emit, group_by, aggregates).
	State string
	// StateSpec is the canonical description State is the print of
	// (StateSpec): stage two stores it with the state.
	StateSpec        []byte
	GroupBy          *config.Expr // nil: the input key
	Aggregates       []CompiledAggregate
	RepartitionTopic string
	ChangelogTopic   string
	// Direct (repartition: false): the input is already partitioned by the
	// group key; the window runs in the input partition's task and
	// RepartitionTopic is only the name its tasks are known by (no such
	// topic is created).
	Direct bool
}

// CompiledAggregate is one compiled aggregation.
type CompiledAggregate struct {
	Name string
	Fn   string
	Of   *config.Expr // nil for a bare count
}

// ProjectedField is one compiled output field of a projection.
type ProjectedField struct {
	Name string
	Expr *config.Expr
}

// Compile turns a loaded config into a Topology. cfg must come from Load
// (it is validated there); dir resolves relative schema paths.
func Compile(cfg *config.Config, dir string) (*Plan, error) {
	t := &Plan{src: cfg, fns: cfg.Functions(), Settings: settingsOf(cfg), EventTime: cfg.EventTime, Match: cfg.Routing.Match, Dirty: cfg.Dirty, Objectives: objectivesOf(cfg)}
	fields, meta := map[string]bool{}, map[string]bool{}
	add := func(e *config.Expr) {
		for _, f := range e.Fields {
			fields[f] = true
		}
		for _, m := range e.Meta {
			meta[m] = true
		}
	}
	for _, in := range cfg.Inputs {
		n := &InputNode{Topic: in.Topic, Format: in.Format, SchemaPath: in.Schema, Start: in.Start, OnGap: in.OnGap}
		if in.Schema != "" {
			s, err := config.LoadSchema(dir, in.Schema)
			if err != nil {
				return nil, fmt.Errorf("input %q: %w", in.Topic, err)
			}
			n.Schema = s
		}
		t.Inputs = append(t.Inputs, n)
	}
	if err := t.compileTables(cfg, dir); err != nil {
		return nil, err
	}
	for i, r := range cfg.Routes {
		rn, err := t.compileRoute(r, add)
		if err != nil {
			return nil, err
		}
		if r.Format == config.OutputConnectJSON || r.Format == config.OutputAvro {
			if err := t.compileConnect(rn, r, fields); err != nil {
				return nil, err
			}
		}
		if rn.Avro != nil {
			rn.Avro.Path = fmt.Sprintf("routes[%d]", i)
			rn.Avro.Line = cfg.RouteLine(rn.Avro.Path)
		}
		t.Routes = append(t.Routes, rn)
		if r.Name == cfg.Routing.Default {
			t.Default = rn
		}
	}
	for i, r := range cfg.Routes {
		if r.Assemble != nil {
			if err := t.compileAssembly(t.Routes[i], r.Assemble, add); err != nil {
				return nil, err
			}
		}
	}
	for f := range fields {
		t.Fields = append(t.Fields, f)
	}
	sort.Strings(t.Fields)
	for m := range meta {
		t.Meta = append(t.Meta, m)
	}
	sort.Strings(t.Meta)
	t.reserveTopics()
	t.Version = fingerprint(struct {
		Inputs    []config.Input
		EventTime config.EventTime
		Routing   config.Routing
		Routes    []config.Route
		Dirty     config.Dirty
		Tables    []config.Table `json:",omitempty"`
	}{cfg.Inputs, cfg.EventTime, cfg.Routing, cfg.Routes, cfg.Dirty, cfg.Tables})
	return t, nil
}

// compileRoute compiles a route's expressions and window; add collects
// the fields they read.
func (t *Plan) compileRoute(r config.Route, add func(*config.Expr)) (*RouteNode, error) {
	rn := &RouteNode{Name: r.Name, Topic: r.Topic, Value: r.Value, Format: r.Format, ForwardTombstones: r.Tombstones == config.TombstonesForward,
		TopicConfigs: r.TopicConfigs, Rules: fingerprint(r), StateVersion: r.StateVersion, src: r}
	var err error
	if r.TopicFrom != nil {
		if rn.TopicFrom, err = t.compileTopicFrom(r); err != nil {
			return nil, err
		}
		add(rn.TopicFrom.Expr)
	}
	if r.When != "" {
		if rn.When, err = t.compileExpr(r.When, true); err != nil {
			return nil, fmt.Errorf("route %q when: %w", r.Name, err)
		}
		add(rn.When)
	}
	if r.Key != "" {
		if rn.Key, err = t.compileExpr(r.Key, false); err != nil {
			return nil, fmt.Errorf("route %q key: %w", r.Name, err)
		}
		add(rn.Key)
	}
	for _, f := range r.Project {
		e, err := t.compileExpr(f.Expr, false)
		if err != nil {
			return nil, fmt.Errorf("route %q project %q: %w", r.Name, f.Name, err)
		}
		add(e)
		rn.Project = append(rn.Project, ProjectedField{Name: f.Name, Expr: e})
	}
	if r.Window != nil {
		if rn.Window, err = t.compileWindow(r, add); err != nil {
			return nil, err
		}
	}
	return rn, nil
}

func (t *Plan) compileWindow(r config.Route, add func(*config.Expr)) (*WindowNode, error) {
	w, app := r.Window, t.Settings.ApplicationID
	wn := &WindowNode{
		Spec:             *w,
		State:            windowStatePrint(w),
		StateSpec:        windowStateSpec(w),
		RepartitionTopic: stateTopic(app, r.Name, r.StateVersion, "repartition"),
		ChangelogTopic:   stateTopic(app, r.Name, r.StateVersion, "changelog"),
		Direct:           w.Repartition != nil && !*w.Repartition,
	}
	var err error
	if w.GroupBy != "" {
		if wn.GroupBy, err = t.compileExpr(w.GroupBy, false); err != nil {
			return nil, fmt.Errorf("route %q group_by: %w", r.Name, err)
		}
		add(wn.GroupBy)
	}
	for _, a := range w.Aggregates {
		ca := CompiledAggregate{Name: a.Name, Fn: a.Fn}
		if a.Of != "" {
			if ca.Of, err = t.compileExpr(a.Of, false); err != nil {
				return nil, fmt.Errorf("route %q aggregate %q: %w", r.Name, a.Name, err)
			}
			add(ca.Of)
		}
		wn.Aggregates = append(wn.Aggregates, ca)
	}
	return wn, nil
}

// compileConnect derives a connect-json (or avro) route's schema; the
// input fields it reads join fields.
func (t *Plan) compileConnect(rn *RouteNode, r config.Route, fields map[string]bool) error {
	var exprs, aggs []*config.Expr
	for _, f := range rn.Project {
		exprs = append(exprs, f.Expr)
	}
	if rn.Window != nil {
		for _, a := range rn.Window.Aggregates {
			aggs = append(aggs, a.Of)
		}
	}
	var topics []string
	var schemas []*jsonschema.Schema
	for _, in := range t.Inputs {
		topics, schemas = append(topics, in.Topic), append(schemas, in.Schema)
	}
	cs, err := config.ConnectSchemaOf(r, exprs, aggs, topics, schemas)
	if err != nil {
		return err
	}
	if r.Format == config.OutputAvro {
		rn.Avro = config.NewAvroSchema(r.Name, r.Topic, cs)
	} else {
		rn.Connect = cs
	}
	for _, f := range cs.InputFields() {
		fields[f] = true
	}
	return nil
}

// compileExpr compiles an expression with the config's functions.
func (t *Plan) compileExpr(src string, asBool bool) (*config.Expr, error) {
	return config.CompileExprWith(src, asBool, t.fns)
}

// Route returns the route named name, or nil.
func (t *Plan) Route(name string) *RouteNode {
	for _, r := range t.Routes {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// OutputTopics lists every topic the topology writes, dirty included.
func (t *Plan) OutputTopics() []string {
	var out []string
	for _, r := range t.Routes {
		if r.Topic != "" {
			out = append(out, r.Topic)
		}
		if r.Window != nil {
			out = append(out, r.Window.Spec.LateTopic)
		}
		if ot := r.OverflowTopic(); ot != "" {
			out = append(out, ot)
		}
		if a := r.Assembly; a != nil {
			out = append(out, a.Spec.IncompleteTopic)
			if a.Spec.DuplicateTopic != "" {
				out = append(out, a.Spec.DuplicateTopic)
			}
		}
	}
	return append(out, t.Dirty.Topic)
}

// Windows lists the window routes.
func (t *Plan) Windows() []*RouteNode {
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
func (t *Plan) InternalTopics() (repartition, changelog []string) {
	for _, r := range t.Windows() {
		if !r.Window.Direct {
			repartition = append(repartition, r.Window.RepartitionTopic)
		}
		changelog = append(changelog, r.Window.ChangelogTopic)
	}
	for _, r := range t.Assemblies() {
		if !r.Assembly.Direct {
			repartition = append(repartition, r.Assembly.RepartitionTopic)
		}
		changelog = append(changelog, r.Assembly.ChangelogTopic)
	}
	return repartition, changelog
}

// InputTopics lists the input topic names.
func (t *Plan) InputTopics() []string {
	var out []string
	for _, in := range t.Inputs {
		out = append(out, in.Topic)
	}
	return out
}

// Open loads, validates and compiles a topology file.
func Open(path string) (*Plan, error) {
	cfg, err := config.LoadFile(path)
	if err != nil {
		return nil, err
	}
	return Compile(cfg, config.DirOf(path))
}

// AssemblyNode is a compiled assembly route. Parts are written to
// RepartitionTopic keyed by ID (stage one, in the same transaction), then
// assembled by the task that owns that partition (stage two), whose state
// goes to ChangelogTopic.
type AssemblyNode struct {
	// Spec is the assemble section as written (defaults applied).
	Spec config.Assemble
	// State is the fingerprint of what its stored state depends on (the
	// ID, the parts, the completion rule and the clock).
	State string
	// StateSpec is the canonical description State is the print of.
	StateSpec        []byte
	Parts            []*PartNode
	RepartitionTopic string
	ChangelogTopic   string
	// Direct (repartition: false): the input is already partitioned by the
	// ID; the assembly runs in the input partition's task and
	// RepartitionTopic is only the name its tasks are known by (no such
	// topic is created).
	Direct bool
}

// PartNode is one compiled part.
type PartNode struct {
	Name string
	// SourceRoute is set when the source is a route, SourceTopic when it
	// is an input topic.
	SourceRoute *RouteNode
	SourceTopic string
	When        *config.Expr // nil: every record of the source
	ID          *config.Expr
	Project     []ProjectedField
}

// Assemblies lists the assembly routes.
func (t *Plan) Assemblies() []*RouteNode {
	var out []*RouteNode
	for _, r := range t.Routes {
		if r.Assembly != nil {
			out = append(out, r)
		}
	}
	return out
}

// compileAssembly compiles an assembly route once every route is compiled
// (a part's source may be any route).
func (t *Plan) compileAssembly(rn *RouteNode, a *config.Assemble, add func(*config.Expr)) error {
	cfg := t.Settings
	an := &AssemblyNode{
		Spec:             *a,
		State:            assemblyStatePrint(a),
		StateSpec:        assemblyStateSpec(a),
		RepartitionTopic: stateTopic(cfg.ApplicationID, rn.Name, rn.src.StateVersion, "repartition"),
		ChangelogTopic:   stateTopic(cfg.ApplicationID, rn.Name, rn.src.StateVersion, "changelog"),
		Direct:           a.Repartition != nil && !*a.Repartition,
	}
	var def *config.Expr
	var err error
	if a.ID != "" {
		if def, err = t.compileExpr(a.ID, false); err != nil {
			return fmt.Errorf("route %q id: %w", rn.Name, err)
		}
		add(def)
	}
	for _, p := range a.Parts {
		pn := &PartNode{Name: p.Name, ID: def}
		if src := t.Route(p.Source); src != nil {
			pn.SourceRoute = src
		} else {
			pn.SourceTopic = p.Source
		}
		if p.When != "" {
			if pn.When, err = t.compileExpr(p.When, true); err != nil {
				return fmt.Errorf("route %q part %q when: %w", rn.Name, p.Name, err)
			}
			add(pn.When)
		}
		if p.ID != "" {
			if pn.ID, err = t.compileExpr(p.ID, false); err != nil {
				return fmt.Errorf("route %q part %q id: %w", rn.Name, p.Name, err)
			}
			add(pn.ID)
		}
		for _, f := range p.Project {
			e, err := t.compileExpr(f.Expr, false)
			if err != nil {
				return fmt.Errorf("route %q part %q project %q: %w", rn.Name, p.Name, f.Name, err)
			}
			add(e)
			pn.Project = append(pn.Project, ProjectedField{Name: f.Name, Expr: e})
		}
		an.Parts = append(an.Parts, pn)
	}
	rn.Assembly = an
	return nil
}
