package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sidestream/sidestream/internal/config"
)

// Formats Describe renders.
const (
	FormatJSON    = "json"
	FormatDOT     = "dot"
	FormatMermaid = "mermaid"
)

// DescribeFormats lists the formats Describe accepts, for flag help and
// error messages.
var DescribeFormats = []string{FormatJSON, FormatDOT, FormatMermaid}

// ErrUnknownFormat is returned (wrapped) by Describe for a format it does
// not render, so a caller can answer 400 rather than 500.
var ErrUnknownFormat = errors.New("unknown describe format")

// Kinds of GraphNode.
const (
	NodeInput     = "input"      // an input topic
	NodeDecode    = "decode"     // decoding one input's format
	NodeSchema    = "schema"     // validating one input against its JSON Schema
	NodeEventTime = "event_time" // extracting the event time
	NodeRouter    = "router"     // evaluating the predicates
	NodeRoute     = "route"      // one route: key and value of its output
	NodeDirty     = "dirty"      // the dirty route
	NodeDrop      = "drop"       // unmatched records dropped (routing.default: drop)
	NodeTopic     = "topic"      // an output topic
	NodeAssemble  = "assemble"   // an assembly: parts joined by ID
)

// Description is a topology as data: what `router topology` prints and
// GET /topology serves. Its fields and their order are part of the API:
// add, never rename. Every list is in config order or sorted, never in map
// order, so two describes of one config are byte-identical.
type Description struct {
	ApplicationID string `json:"application_id"`
	// Version is the plan's content fingerprint (Plan.Version): what the
	// sidestream.topology.version header of every output names.
	Version   string           `json:"version"`
	Guarantee config.Guarantee `json:"guarantee"`
	// CommitInterval is a Go duration string, e.g. "100ms".
	CommitInterval string       `json:"commit_interval"`
	Match          config.Match `json:"match"`
	// Default is the route for unmatched records, or "drop".
	Default   string             `json:"default"`
	Inputs    []DescribedInput   `json:"inputs"`
	EventTime DescribedEventTime `json:"event_time"`
	Routes    []DescribedRoute   `json:"routes"`
	Dirty     DescribedDirty     `json:"dirty"`
	// Fields is every record field any expression reads, sorted: what the
	// decoder extracts.
	Fields []string    `json:"fields"`
	Nodes  []GraphNode `json:"nodes"`
	Edges  []GraphEdge `json:"edges"`
}

// DescribedInput is one input topic.
type DescribedInput struct {
	Topic  string `json:"topic"`
	Format string `json:"format"`
	// Schema is the JSON Schema path as written in the config; "" for none.
	Schema string `json:"schema"`
}

// DescribedEventTime says where event time comes from.
type DescribedEventTime struct {
	Field  string `json:"field"` // "" with format kafka
	Format string `json:"format"`
}

// DescribedRoute is one route.
type DescribedRoute struct {
	Name  string `json:"name"`
	Topic string `json:"topic"`
	When  string `json:"when"` // "" matches every record
	Key   string `json:"key"`  // "" keeps the input key
	Value string `json:"value"`
	// Format is how the value is written: raw, json, connect-json or avro.
	Format string `json:"format"`
	// Project is the projection in output order; empty unless value is
	// projection.
	Project []DescribedField `json:"project"`
	// Fields are the record fields this route's expressions read, sorted.
	Fields  []string `json:"fields"`
	Default bool     `json:"default"`
	// Assemble is set on assembly routes.
	Assemble *DescribedAssembly `json:"assemble,omitempty"`
	// Tombstones is "forward" when input tombstones are written to Topic;
	// "" when they go to dirty.
	Tombstones string `json:"tombstones,omitempty"`
	// Window is set on window routes: Topic then receives window results.
	Window *DescribedWindow `json:"window,omitempty"`
	// TopicFrom is set on a route whose topic is computed per record;
	// Topic is then its pattern (the allow-list in braces).
	TopicFrom *DescribedTopicFrom `json:"topic_from,omitempty"`
}

// DescribedTopicFrom is a route's topic computed per record.
type DescribedTopicFrom struct {
	Expr  string `json:"expr"`
	Allow string `json:"allow"` // globs and /regex/, joined by " | "
	// Missing is create or require.
	Missing string `json:"missing"`
}

// DescribedWindow is a window route's operator, defaults filled in.
// Durations are Go durations; "" where the window type has none.
type DescribedWindow struct {
	Type              string               `json:"type"`
	Size              string               `json:"size,omitempty"`
	Advance           string               `json:"advance,omitempty"`
	Gap               string               `json:"gap,omitempty"`
	MaxOutOfOrderness string               `json:"max_out_of_orderness"`
	Grace             string               `json:"grace"`
	IdleTimeout       string               `json:"idle_timeout,omitempty"` // "": off
	Watermark         string               `json:"watermark"`
	Emit              string               `json:"emit"`
	GroupBy           string               `json:"group_by"` // "": the input key
	Aggregates        []DescribedAggregate `json:"aggregates"`
	LateTopic         string               `json:"late_topic"`
	DescribedState
}

// DescribedState is what window and assembly routes share: where their
// state travels and lives, and its limits.
type DescribedState struct {
	Repartition      bool             `json:"repartition"`
	RepartitionTopic string           `json:"repartition_topic,omitempty"` // none with repartition: false
	ChangelogTopic   string           `json:"changelog_topic"`
	Limits           *DescribedLimits `json:"limits,omitempty"`
}

func describeState(direct bool, repartition, changelog string, l *config.Limits) DescribedState {
	d := DescribedState{Repartition: !direct, ChangelogTopic: changelog, Limits: describeLimits(l)}
	if !direct {
		d.RepartitionTopic = repartition
	}
	return d
}

// DescribedAggregate is one aggregation of a window route.
type DescribedAggregate struct {
	Name string `json:"name"`
	Fn   string `json:"fn"`
	Of   string `json:"of,omitempty"` // "": count of records
}

// DescribedLimits are a stateful route's state limits (0: no bound).
type DescribedLimits struct {
	MaxEntries    int    `json:"max_entries,omitempty"`
	MaxBytes      int64  `json:"max_bytes,omitempty"`
	OnOverflow    string `json:"on_overflow"`
	OverflowTopic string `json:"overflow_topic,omitempty"` // on_overflow: route
}

// DescribedAssembly is an assembly route's operator.
type DescribedAssembly struct {
	ID              string          `json:"id"`
	Parts           []DescribedPart `json:"parts"`
	CompleteWhen    []string        `json:"complete_when"` // empty: all parts
	TTL             string          `json:"ttl"`
	Time            string          `json:"time"`
	Duplicates      string          `json:"duplicates"`
	Retention       string          `json:"retention"`
	IncompleteTopic string          `json:"incomplete_topic"`
	DuplicateTopic  string          `json:"duplicate_topic"`
	DescribedState
}

// DescribedPart is one part of an assembly.
type DescribedPart struct {
	Name    string           `json:"name"`
	Source  string           `json:"source"` // a route name or an input topic
	When    string           `json:"when"`
	ID      string           `json:"id"`
	Project []DescribedField `json:"project"`
}

// DescribedField is one projected output field.
type DescribedField struct {
	Name string `json:"name"`
	Expr string `json:"expr"`
}

// DescribedDirty is the dirty route.
type DescribedDirty struct {
	Topic          string `json:"topic"`
	MaxRecordBytes int    `json:"max_record_bytes"`
	TruncateTo     int    `json:"truncate_to"`
	// Stages are the stages whose failures this topology can send to the
	// dirty route, in processing order.
	Stages []string `json:"stages"`
}

// GraphNode is a vertex of the processing graph.
type GraphNode struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Label string `json:"label"` // may hold newlines
}

// GraphEdge is a directed edge of the processing graph; Label is "" when
// the edge needs none.
type GraphEdge struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Label string `json:"label"`
}

// Describe renders the topology as "json" (a Description), "dot" (Graphviz)
// or "mermaid" (a flowchart). The output depends only on the topology.
func (t *Plan) Describe(format string) ([]byte, error) {
	d := t.Description()
	switch format {
	case FormatJSON:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		// Expressions are full of < > &: keep them readable.
		enc.SetEscapeHTML(false)
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("describe json: %w", err)
		}
		return b.Bytes(), nil
	case FormatDOT:
		return d.dot(), nil
	case FormatMermaid:
		return d.mermaid(), nil
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownFormat, format, strings.Join(DescribeFormats, ", "))
}

// Description returns the topology as data, graph included.
func (t *Plan) Description() *Description {
	d := &Description{
		Version:   t.Version,
		Match:     t.Match,
		Default:   config.DropDefault,
		Inputs:    []DescribedInput{},
		EventTime: DescribedEventTime{Field: t.EventTime.Field, Format: t.EventTime.Format},
		Routes:    []DescribedRoute{},
		Fields:    append([]string{}, t.Fields...),
		Nodes:     []GraphNode{},
		Edges:     []GraphEdge{},
	}
	if c := t.Settings; c.ApplicationID != "" {
		d.ApplicationID = c.ApplicationID
		d.Guarantee = c.Guarantee
		d.CommitInterval = c.CommitInterval.D().String()
	}
	if t.Default != nil {
		d.Default = t.Default.Name
	}
	g := &describer{t: t, d: d, all: map[string]bool{}}
	// The main path first, then the dirty edges in the order a record
	// meets the stages, so each format lists the graph as a record travels.
	g.inputs()
	g.eventTime()
	var assemblies []*RouteNode
	for i, r := range t.Routes {
		if g.route(i, r) {
			assemblies = append(assemblies, r)
		}
	}
	for _, r := range assemblies {
		g.assembly(r)
	}
	if len(d.Fields) == 0 && len(g.all) > 0 {
		d.Fields = sortedKeys(g.all)
	}
	g.finish()
	return d
}

// Node ids of the graph's fixed stages.
const describeEventTime, describeRouter = "event_time", "router"

// describer builds one Description's graph: the nodes and main edges as
// it goes, the dirty edges kept apart by stage to be listed last.
type describer struct {
	t *Plan
	d *Description

	decodeErrs, schemaErrs, laterErrs, windowErrs []GraphEdge
	stages                                        []string
	all                                           map[string]bool // fields any route reads
	hasExpr, hasWindow                            bool
}

func (g *describer) node(id, kind, label string) {
	g.d.Nodes = append(g.d.Nodes, GraphNode{ID: id, Kind: kind, Label: label})
}

func (g *describer) edge(from, to, label string) {
	g.d.Edges = append(g.d.Edges, GraphEdge{From: from, To: to, Label: label})
}

// inputs: each input topic, its decode and its schema stage.
func (g *describer) inputs() {
	for _, in := range g.t.Inputs {
		g.d.Inputs = append(g.d.Inputs, DescribedInput{Topic: in.Topic, Format: in.Format, Schema: in.SchemaPath})
		id, dec := "input:"+in.Topic, "decode:"+in.Topic
		g.node(id, NodeInput, in.Topic)
		g.node(dec, NodeDecode, "decode "+in.Format)
		g.edge(id, dec, "")
		g.decodeErrs = append(g.decodeErrs, GraphEdge{From: dec, To: "dirty", Label: "decode"})
		last := dec
		if in.Schema != nil || in.SchemaPath != "" {
			sch := "schema:" + in.Topic
			label := "schema"
			if in.SchemaPath != "" {
				label += "\n" + in.SchemaPath
			}
			g.node(sch, NodeSchema, label)
			g.edge(dec, sch, "")
			g.schemaErrs = append(g.schemaErrs, GraphEdge{From: sch, To: "dirty", Label: "schema"})
			last = sch
		}
		g.edge(last, describeEventTime, "")
	}
	if len(g.decodeErrs) > 0 {
		g.stages = append(g.stages, "decode")
	}
	if len(g.schemaErrs) > 0 {
		g.stages = append(g.stages, "schema")
	}
}

// eventTime: the event-time stage and the router after it.
func (g *describer) eventTime() {
	t := g.t
	if t.EventTime.Format == config.TimeKafka || t.EventTime.Format == "" {
		g.node(describeEventTime, NodeEventTime, "event time\nKafka timestamp")
	} else {
		g.node(describeEventTime, NodeEventTime, fmt.Sprintf("event time\n%s (%s)", t.EventTime.Field, t.EventTime.Format))
		// Only a field can be missing or malformed; the Kafka timestamp
		// is always there.
		g.laterErrs = append(g.laterErrs, GraphEdge{From: describeEventTime, To: "dirty", Label: "event_time"})
		g.stages = append(g.stages, "event_time")
	}
	g.node(describeRouter, NodeRouter, "router\nmatch: "+string(t.Match))
	g.edge(describeEventTime, describeRouter, "")
}

// route describes route i; an assembly route is only listed (its graph
// comes after every plain route's), and route says so.
func (g *describer) route(i int, r *RouteNode) (assembly bool) {
	dr := g.describeRoute(r)
	g.d.Routes = append(g.d.Routes, dr)
	if r.Assembly != nil {
		return true
	}
	id := "route:" + r.Name
	g.node(id, NodeRoute, routeLabel(dr))
	order := ""
	if g.t.Match != config.MatchAll {
		order = ordinal(i + 1)
	}
	g.edge(describeRouter, id, order)
	switch {
	case r.Window != nil:
		g.edge(id, "topic:"+r.Topic, "results")
	case r.TopicFrom != nil:
		// The pattern stands for every topic the route may compute.
		g.edge(id, "topic:"+dr.Topic, r.TopicFrom.Expr.Source)
	default:
		g.edge(id, "topic:"+r.Topic, "")
	}
	g.node("topic:"+dr.Topic, NodeTopic, dr.Topic)
	if w := dr.Window; w != nil && w.Limits != nil && w.Limits.OverflowTopic != "" {
		g.edge(id, "topic:"+w.Limits.OverflowTopic, "overflow")
		g.node("topic:"+w.Limits.OverflowTopic, NodeTopic, w.Limits.OverflowTopic)
	}
	if r.Window != nil && r.Window.Spec.LateTopic != "" {
		// A side route like the assembly's incomplete and duplicate ones.
		g.edge(id, "topic:"+r.Window.Spec.LateTopic, "late")
		g.node("topic:"+r.Window.Spec.LateTopic, NodeTopic, r.Window.Spec.LateTopic)
	}
	if r.Window != nil {
		g.windowErrs = append(g.windowErrs, GraphEdge{From: id, To: "dirty", Label: "window"})
	}
	return false
}

// describeRoute is one route as data, with the fields its expressions read.
func (g *describer) describeRoute(r *RouteNode) DescribedRoute {
	dr := DescribedRoute{Name: r.Name, Topic: r.Topic, Value: r.Value, Format: r.Format, Project: []DescribedField{}, Default: r == g.t.Default}
	if tf := r.TopicFrom; tf != nil {
		dr.Topic = tf.Pattern()
		dr.TopicFrom = &DescribedTopicFrom{Expr: tf.Expr.Source, Allow: tf.Allow.String(), Missing: config.MissingRequire}
		if tf.Create {
			dr.TopicFrom.Missing = config.MissingCreate
		}
	}
	if r.ForwardTombstones {
		dr.Tombstones = config.TombstonesForward
	}
	fields := map[string]bool{}
	addFields := func(e *config.Expr) {
		for _, f := range e.Fields {
			fields[f] = true
			g.all[f] = true
		}
	}
	if r.When != nil {
		dr.When = r.When.Source
		addFields(r.When)
		g.hasExpr = true
	}
	if r.Key != nil {
		dr.Key = r.Key.Source
		addFields(r.Key)
		g.hasExpr = true
	}
	for _, f := range r.Project {
		dr.Project = append(dr.Project, DescribedField{Name: f.Name, Expr: f.Expr.Source})
		addFields(f.Expr)
		g.hasExpr = true
	}
	if r.Window != nil {
		dr.Window = describeWindow(r.Window)
		if gb := r.Window.GroupBy; gb != nil {
			addFields(gb)
			g.hasExpr = true
		}
		for _, a := range r.Window.Aggregates {
			if a.Of != nil {
				addFields(a.Of)
			}
		}
		g.hasWindow = true
	}
	dr.Fields = sortedKeys(fields)
	if r.Assembly != nil {
		dr.Assemble = describeAssembly(r.Assembly)
	}
	return dr
}

// assembly: an assembly route's node, its parts and its side topics.
func (g *describer) assembly(r *RouteNode) {
	a := r.Assembly
	id := "assemble:" + r.Name
	g.node(id, NodeAssemble, fmt.Sprintf("assemble %s\nby ID, ttl %s (%s time)", r.Name, a.Spec.TTL.D(), a.Spec.Time))
	for _, p := range a.Parts {
		if p.SourceRoute != nil {
			g.edge("route:"+p.SourceRoute.Name, id, "part "+p.Name)
		} else {
			// Decoded like every input record, then taken as a part.
			g.edge(describeRouter, id, "part "+p.Name+" from "+p.SourceTopic)
		}
	}
	g.edge(id, "topic:"+r.Topic, "complete")
	g.node("topic:"+r.Topic, NodeTopic, r.Topic)
	g.edge(id, "topic:"+a.Spec.IncompleteTopic, "ttl: incomplete")
	g.node("topic:"+a.Spec.IncompleteTopic, NodeTopic, a.Spec.IncompleteTopic)
	if t := a.Spec.DuplicateTopic; t != "" {
		g.edge(id, "topic:"+t, "duplicate")
		g.node("topic:"+t, NodeTopic, t)
	}
	if l := a.Spec.Limits; l != nil && l.OverflowTopic != "" && l.OnOverflow != config.OverflowEvict && (l.MaxEntries > 0 || l.MaxBytes > 0) {
		g.edge(id, "topic:"+l.OverflowTopic, "overflow")
		g.node("topic:"+l.OverflowTopic, NodeTopic, l.OverflowTopic)
	}
	g.laterErrs = append(g.laterErrs, GraphEdge{From: id, To: "dirty", Label: "assemble"})
}

// finish: the default edge, the dirty stages and the dirty edges last.
func (g *describer) finish() {
	t, d := g.t, g.d
	if t.Default != nil {
		g.edge(describeRouter, "route:"+t.Default.Name, "no match")
	} else {
		g.node("drop", NodeDrop, "drop\n(counted)")
		g.edge(describeRouter, "drop", "no match")
	}
	if g.hasExpr {
		// A predicate, key or projection that fails to evaluate makes the
		// whole record dirty at the route stage.
		g.laterErrs = append(g.laterErrs, GraphEdge{From: describeRouter, To: "dirty", Label: "route"})
		g.stages = append(g.stages, "route")
	}
	if g.hasWindow {
		// A non-numeric value for sum/min/max/avg, or a group key that
		// is not the input partition's (repartition: false).
		g.laterErrs = append(g.laterErrs, g.windowErrs...)
		g.stages = append(g.stages, "window")
	}
	if g.stages == nil {
		g.stages = []string{}
	}
	d.Dirty = DescribedDirty{Topic: t.Dirty.Topic, MaxRecordBytes: t.Dirty.MaxRecordBytes, TruncateTo: t.Dirty.TruncateTo, Stages: g.stages}
	g.node("dirty", NodeDirty, "dirty")
	d.Edges = append(append(append(d.Edges, g.decodeErrs...), g.schemaErrs...), g.laterErrs...)
	g.edge("dirty", "topic:"+t.Dirty.Topic, "")
	g.node("topic:"+t.Dirty.Topic, NodeTopic, t.Dirty.Topic)
}

func describeAssembly(a *AssemblyNode) *DescribedAssembly {
	c := a.Spec
	da := &DescribedAssembly{
		ID: c.ID, CompleteWhen: append([]string{}, c.CompleteWhen...), TTL: c.TTL.D().String(), Time: c.Time,
		Duplicates: c.Duplicates, Retention: c.Retention.D().String(), IncompleteTopic: c.IncompleteTopic,
		DuplicateTopic: c.DuplicateTopic, Parts: []DescribedPart{},
		DescribedState: describeState(a.Direct, a.RepartitionTopic, a.ChangelogTopic, c.Limits),
	}
	for _, p := range c.Parts {
		dp := DescribedPart{Name: p.Name, Source: p.Source, When: p.When, ID: p.ID, Project: []DescribedField{}}
		for _, f := range p.Project {
			dp.Project = append(dp.Project, DescribedField(f))
		}
		da.Parts = append(da.Parts, dp)
	}
	return da
}

func describeWindow(w *WindowNode) *DescribedWindow {
	c := w.Spec
	dw := &DescribedWindow{
		Type: c.Type, MaxOutOfOrderness: c.MaxOutOfOrderness.D().String(), Grace: c.Grace.D().String(),
		Watermark: c.Watermark, Emit: c.Emit, GroupBy: c.GroupBy, LateTopic: c.LateTopic,
		Aggregates:     []DescribedAggregate{},
		DescribedState: describeState(w.Direct, w.RepartitionTopic, w.ChangelogTopic, c.Limits),
	}
	if c.Size > 0 {
		dw.Size = c.Size.D().String()
	}
	if c.Advance > 0 {
		dw.Advance = c.Advance.D().String()
	}
	if c.Gap > 0 {
		dw.Gap = c.Gap.D().String()
	}
	if c.IdleTimeout > 0 {
		dw.IdleTimeout = c.IdleTimeout.D().String()
	}
	for _, a := range c.Aggregates {
		dw.Aggregates = append(dw.Aggregates, DescribedAggregate(a))
	}
	return dw
}

// describeLimits is nil when l bounds nothing.
func describeLimits(l *config.Limits) *DescribedLimits {
	if l == nil || (l.MaxEntries == 0 && l.MaxBytes == 0) {
		return nil
	}
	d := &DescribedLimits{MaxEntries: l.MaxEntries, MaxBytes: l.MaxBytes, OnOverflow: l.OnOverflow}
	if l.OnOverflow != config.OverflowEvict {
		d.OverflowTopic = l.OverflowTopic
	}
	return d
}

func routeLabel(r DescribedRoute) string {
	var b strings.Builder
	b.WriteString(r.Name)
	if r.Default {
		b.WriteString(" (default)")
	}
	when := r.When
	if when == "" {
		when = "always"
	}
	fmt.Fprintf(&b, "\nwhen: %s", oneLine(when))
	if r.Key != "" {
		fmt.Fprintf(&b, "\nkey: %s", oneLine(r.Key))
	}
	if w := r.Window; w != nil {
		span := w.Size
		switch w.Type {
		case config.WindowHopping:
			span += " every " + w.Advance
		case config.WindowSession:
			span = "gap " + w.Gap
		}
		fmt.Fprintf(&b, "\nwindow: %s %s, grace %s", w.Type, span, w.Grace)
		by := "input key"
		if w.GroupBy != "" {
			by = oneLine(w.GroupBy)
		}
		fmt.Fprintf(&b, "\nby %s; late: %s", by, w.LateTopic)
		return b.String()
	}
	fmt.Fprintf(&b, "\nvalue: %s", r.Value)
	if len(r.Project) > 0 {
		names := make([]string, len(r.Project))
		for i, f := range r.Project {
			names[i] = f.Name
		}
		fmt.Fprintf(&b, " {%s}", strings.Join(names, ", "))
	}
	if r.Tombstones == config.TombstonesForward {
		b.WriteString("\ntombstones: forward")
	}
	return b.String()
}

// oneLine folds a multi-line expression (a YAML block scalar) so a label
// line stays one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// dot renders Graphviz. Topics are cylinders, the router a diamond, the
// default route bold, failure edges dashed red.
func (d *Description) dot() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// sidestream topology %s: render with `dot -Tsvg`\n", d.ApplicationID)
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(d.ApplicationID))
	b.WriteString("  rankdir=LR;\n")
	b.WriteString("  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=9];\n")
	defaultID := ""
	if d.Default != config.DropDefault {
		defaultID = "route:" + d.Default
	}
	for _, n := range d.Nodes {
		attrs := "label=" + dotQuote(n.Label)
		switch n.Kind {
		case NodeInput, NodeTopic:
			attrs += ", shape=cylinder"
		case NodeRouter:
			attrs += ", shape=diamond"
		case NodeRoute:
			attrs += ", style=rounded"
			if n.ID == defaultID {
				attrs += ", penwidth=2"
			}
		case NodeDirty:
			attrs += ", color=red, fontcolor=red"
		case NodeDrop:
			attrs += ", shape=octagon, color=gray50, fontcolor=gray50"
		}
		fmt.Fprintf(&b, "  %s [%s];\n", dotQuote(n.ID), attrs)
	}
	for _, e := range d.Edges {
		var attrs []string
		if e.Label != "" {
			attrs = append(attrs, "label="+dotQuote(e.Label))
		}
		if e.To == "dirty" {
			attrs = append(attrs, "style=dashed", "color=red", "fontcolor=red")
		}
		if e.Label == "no match" {
			attrs = append(attrs, "style=dotted")
		}
		fmt.Fprintf(&b, "  %s -> %s", dotQuote(e.From), dotQuote(e.To))
		if len(attrs) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(attrs, ", "))
		}
		b.WriteString(";\n")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// dotQuote makes a DOT double-quoted string; a newline becomes a centred
// line break.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}

// mermaid renders a Mermaid flowchart. The class for the default route is
// not called "default": Mermaid applies a class of that name to every node.
// Mermaid ids allow few characters,
// so each node gets a sanitised id, made unique with a suffix if two
// sanitise alike.
func (d *Description) mermaid() []byte {
	ids := map[string]string{}
	used := map[string]bool{}
	for _, n := range d.Nodes {
		base := mermaidID(n.ID)
		id := base
		for i := 2; used[id]; i++ {
			id = fmt.Sprintf("%s_%d", base, i)
		}
		used[id] = true
		ids[n.ID] = id
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%%%% sidestream topology %s\n", mermaidComment(d.ApplicationID))
	b.WriteString("flowchart LR\n")
	defaultID := ""
	if d.Default != config.DropDefault {
		defaultID = "route:" + d.Default
	}
	var classes []string
	for _, n := range d.Nodes {
		id, label := ids[n.ID], mermaidQuote(n.Label)
		switch n.Kind {
		case NodeInput, NodeTopic:
			fmt.Fprintf(&b, "  %s[(%s)]\n", id, label)
		case NodeRouter:
			fmt.Fprintf(&b, "  %s{%s}\n", id, label)
		case NodeRoute:
			fmt.Fprintf(&b, "  %s(%s)\n", id, label)
		case NodeDrop:
			fmt.Fprintf(&b, "  %s{{%s}}\n", id, label)
		default:
			fmt.Fprintf(&b, "  %s[%s]\n", id, label)
		}
		switch {
		case n.Kind == NodeDirty:
			classes = append(classes, "  class "+id+" dirty")
		case n.Kind == NodeDrop:
			classes = append(classes, "  class "+id+" drop")
		case n.ID == defaultID:
			classes = append(classes, "  class "+id+" defaultRoute")
		}
	}
	for _, e := range d.Edges {
		arrow := "-->"
		if e.To == "dirty" || e.Label == "no match" {
			arrow = "-.->"
		}
		if e.Label != "" {
			fmt.Fprintf(&b, "  %s %s|%s| %s\n", ids[e.From], arrow, mermaidQuote(e.Label), ids[e.To])
		} else {
			fmt.Fprintf(&b, "  %s %s %s\n", ids[e.From], arrow, ids[e.To])
		}
	}
	b.WriteString("  classDef dirty stroke:#c00,color:#c00\n")
	b.WriteString("  classDef drop stroke:#888,color:#888\n")
	b.WriteString("  classDef defaultRoute stroke-width:3px\n")
	for _, c := range classes {
		b.WriteString(c + "\n")
	}
	return b.Bytes()
}

func mermaidID(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// mermaidQuote makes a quoted Mermaid label. Mermaid reads #name; as an
// entity and the label as HTML, so # goes first, then the characters an
// expression is likely to hold.
func mermaidQuote(s string) string {
	r := strings.NewReplacer("#", "#35;", `"`, "#quot;", "<", "#lt;", ">", "#gt;", "&", "#amp;", "\r", "", "\n", "<br/>")
	return `"` + r.Replace(s) + `"`
}

func mermaidComment(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }
