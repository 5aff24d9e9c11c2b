package plan

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/sidestream/sidestream/internal/config"
)

// Classes of a change between two plans (router plan OLD NEW).
const (
	// Live: applies to a running router without touching stored state
	// (predicates, keys, projections, formats, topics, stateless routes,
	// limits, grace, late topics, TTLs).
	Live = "live"
	// NewState: a new window or assembly starts with empty state, reading
	// its inputs from their committed position on.
	NewState = "new_state"
	// Breaking: a stored state's spec changes, so the state written
	// before cannot be read; the route needs a remedy.
	Breaking = "breaking"
)

// Change is one difference between two plans.
type Change struct {
	Path  string `json:"path"`  // e.g. routes[revenue].window.aggregates
	Class string `json:"class"` // Live, NewState or Breaking
	Route string `json:"route,omitempty"`
	Was   any    `json:"was,omitempty"` // the old value as written (nil: absent)
	Now   any    `json:"now,omitempty"` // the new value as written (nil: absent)
	Note  string `json:"note,omitempty"`
	// Detail says what differs inside a list: the items added and removed.
	Detail string `json:"detail,omitempty"`
}

// Diff lists every difference from old to new, each with its class, in
// the new file's order (removed routes last). Both plans must come from
// Compile.
func Diff(old, new *Plan) []Change {
	var out []Change
	out = append(out, diffTop(old.src, new.src)...)
	olds := map[string]*RouteNode{}
	for _, r := range old.Routes {
		olds[r.Name] = r
	}
	seen := map[string]bool{}
	for _, r := range new.Routes {
		seen[r.Name] = true
		o, ok := olds[r.Name]
		if !ok {
			out = append(out, added(r))
			continue
		}
		out = append(out, newVersion(o, r, diffRoute(o, r))...)
	}
	for _, r := range old.Routes {
		if !seen[r.Name] {
			out = append(out, removed(r))
		}
	}
	return out
}

func stateful(r *RouteNode) bool { return r.Window != nil || r.Assembly != nil }

func added(r *RouteNode) Change {
	c := Change{Path: "routes[" + r.Name + "]", Route: r.Name, Class: Live, Now: r.src, Note: "a new stateless route: records from the next batch on"}
	if stateful(r) {
		c.Class = NewState
		c.Note = "a new stateful route: its state starts empty, from the inputs' committed offsets on (records before are not in it)"
	}
	return c
}

func removed(r *RouteNode) Change {
	c := Change{Path: "routes[" + r.Name + "]", Route: r.Name, Class: Live, Was: r.src, Note: "removed: its topic is no longer written"}
	if stateful(r) {
		c.Note = "removed: its state is no longer kept; its repartition and changelog topics stay until deleted"
	}
	return c
}

// newVersion reclasses a route's breaking changes when its state_version
// changed too: the route starts on new internal topics with empty state,
// so nothing reads the state written under the old spec.
func newVersion(o, n *RouteNode, changes []Change) []Change {
	if o.src.StateVersion == n.src.StateVersion || !stateful(n) {
		return changes
	}
	for i := range changes {
		if changes[i].Class == Breaking {
			changes[i].Class = NewState
			changes[i].Note = "covered by the new state_version: " + changes[i].Note
		}
	}
	return changes
}

// diffRoute compares one route field by field.
func diffRoute(o, n *RouteNode) []Change {
	var out []Change
	p := "routes[" + n.Name + "]"
	switch {
	case stateful(o) != stateful(n) || (o.Window == nil) != (n.Window == nil):
		c := Change{Path: p, Route: n.Name, Class: NewState, Was: o.src, Now: n.src,
			Note: "the route changes kind: its new state starts empty from the inputs' committed offsets on"}
		if !stateful(n) {
			c.Class, c.Note = Live, "the route becomes stateless: its old state is no longer kept; its internal topics stay until deleted"
		}
		return []Change{c}
	}
	out = append(out, diffFields(p, n.Name, reflect.ValueOf(o.src), reflect.ValueOf(n.src), routeClass)...)
	return out
}

// routeClass classifies a changed field of a route by its path below
// the route: the fields a stored state's layout or meaning depends on
// are breaking, everything else is live.
func routeClass(sub string) (string, string) {
	switch sub {
	case "window.type", "window.size", "window.advance", "window.gap", "window.group_by", "window.aggregates", "window.watermark", "window.repartition":
		return Breaking, "the window state was written with the old value"
	case "window.grace", "window.emit":
		return Breaking, "the stored windows' timers are placed by the old value"
	case "assemble.id", "assemble.parts", "assemble.complete_when", "assemble.time", "assemble.repartition":
		return Breaking, "the open assemblies were stored with the old value"
	case "state_version":
		return NewState, "a new state version: the route starts on new internal topics with empty state from the inputs' committed offsets; " +
			"the old version's topics stay until `router reset --route NAME --stale` removes them"
	case "topic_configs", "window.late_topic_configs":
		return Live, "topic configs apply when the router creates a topic; an existing topic keeps its own"
	}
	return Live, ""
}

// diffFields walks two values of one config type and reports each
// differing leaf (a struct field by its yaml name; slices and maps are
// compared whole).
func diffFields(path, route string, o, n reflect.Value, class func(string) (string, string)) []Change {
	var out []Change
	var walk func(sub string, o, n reflect.Value)
	walk = func(sub string, o, n reflect.Value) {
		if o.Kind() == reflect.Pointer || n.Kind() == reflect.Pointer {
			if o.IsNil() || n.IsNil() {
				if o.IsNil() != n.IsNil() {
					out = append(out, change(path, sub, route, o, n, class))
				}
				return
			}
			o, n = o.Elem(), n.Elem()
		}
		if o.Kind() != reflect.Struct {
			if !reflect.DeepEqual(o.Interface(), n.Interface()) {
				out = append(out, change(path, sub, route, o, n, class))
			}
			return
		}
		for i := 0; i < o.NumField(); i++ {
			f := o.Type().Field(i)
			name := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			walk(join(sub, name), o.Field(i), n.Field(i))
		}
	}
	walk("", o, n)
	return out
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func change(path, sub, route string, o, n reflect.Value, class func(string) (string, string)) Change {
	cl, note := class(sub)
	return Change{Path: join(path, sub), Route: route, Class: cl, Was: value(o), Now: value(n), Note: note, Detail: listDetail(o, n)}
}

// listDetail names the items of two lists that are in one only
// (compared as JSON), "" when the values are not lists.
func listDetail(o, n reflect.Value) string {
	if o.Kind() != reflect.Slice || n.Kind() != reflect.Slice {
		return ""
	}
	items := func(v reflect.Value) []string {
		out := make([]string, v.Len())
		for i := range out {
			out[i] = compact(v.Index(i).Interface())
		}
		return out
	}
	was, now := items(o), items(n)
	var parts []string
	for _, x := range now {
		if !contains(was, x) {
			parts = append(parts, "added "+x)
		}
	}
	for _, x := range was {
		if !contains(now, x) {
			parts = append(parts, "removed "+x)
		}
	}
	if len(parts) == 0 {
		return "the same items in another order"
	}
	return strings.Join(parts, "; ")
}

// value is a field's value as written, nil when absent.
func value(v reflect.Value) any {
	if !v.IsValid() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.IsNil() {
		return nil
	}
	if d, ok := v.Interface().(config.Duration); ok {
		return d.D().String()
	}
	if s, ok := v.Interface().(config.Span); ok {
		return s.D().String()
	}
	return v.Interface()
}

// diffTop compares the sections outside routes. A new application_id is
// a new group with no state: breaking for every stateful route.
func diffTop(o, n *config.Config) []Change {
	var out []Change
	if o.ApplicationID != n.ApplicationID {
		out = append(out, Change{Path: "application_id", Class: Breaking, Was: o.ApplicationID, Now: n.ApplicationID,
			Note: "a new consumer group and new internal topics: every input is read again from its start position and every state starts empty"})
	}
	type section struct {
		name string
		o, n any
	}
	for _, s := range []section{
		{"inputs", o.Inputs, n.Inputs}, {"event_time", o.EventTime, n.EventTime}, {"routing", o.Routing, n.Routing},
		{"dirty", o.Dirty, n.Dirty}, {"guarantee", o.Guarantee, n.Guarantee}, {"commit_interval", o.CommitInterval, n.CommitInterval},
		{"commit_records", o.CommitRecords, n.CommitRecords}, {"topics", o.Topics, n.Topics}, {"state", o.State, n.State},
		{"client", o.Client, n.Client}, {"schema_registry.url", o.SchemaRegistry.URL, n.SchemaRegistry.URL},
		{"limits", o.Limits, n.Limits},
	} {
		if !reflect.DeepEqual(s.o, s.n) {
			out = append(out, Change{Path: s.name, Class: Live, Was: s.o, Now: s.n, Note: topNote(s.name)})
		}
	}
	return out
}

func topNote(section string) string {
	switch section {
	case "inputs", "event_time", "routing", "dirty":
		return ""
	}
	return "takes effect when the router starts again"
}

// Summary counts the changes by class.
func Summary(changes []Change) map[string]int {
	out := map[string]int{Live: 0, NewState: 0, Breaking: 0}
	for _, c := range changes {
		out[c.Class]++
	}
	return out
}

// Remedies are the ways out of the breaking changes, with the exact
// commands, for a topology file path and its application.
func Remedies(changes []Change, newPath, appID string) []string {
	var routes []string
	app := false
	for _, c := range changes {
		if c.Class != Breaking {
			continue
		}
		if c.Route == "" {
			app = true
		} else if !contains(routes, c.Route) {
			routes = append(routes, c.Route)
		}
	}
	if len(routes) == 0 && !app {
		return nil
	}
	sort.Strings(routes)
	var out []string
	for _, r := range routes {
		out = append(out, RouteRemedies(r, newPath)...)
	}
	if len(routes) > 0 {
		out = append(out, fmt.Sprintf("give each changed stateful route (%s) a new name in %s: it starts on new internal topics with empty state from the inputs' committed offsets, and the other routes keep theirs", strings.Join(routes, ", "), newPath))
	}
	out = append(out,
		fmt.Sprintf("reprocess from the start with empty state: stop every instance, then `router reset --config %s --dry-run` and `router reset --config %s` (application %s: its input offsets and all its internal topics)", newPath, newPath, appID),
		fmt.Sprintf("or run %s under a new application_id: a new group that reads every input from its start position", newPath))
	return out
}

// RouteRemedies are the ways out for one stateful route whose state
// was written with another spec, each with its exact commands: its own
// reset, or a new state version. Both router plan and a held route's
// /readyz name them.
func RouteRemedies(route, path string) []string {
	return []string{
		fmt.Sprintf("reset route %s alone: stop every instance, then `router reset --route %s --config %s --dry-run` and `router reset --route %s --config %s` "+
			"(its state, changelog and repartition topics and their offsets; its state starts empty from the inputs' committed offsets, the other routes keep theirs)", route, route, path, route, path),
		fmt.Sprintf("or raise the route's state_version in %s (routes[%s].state_version): it starts on new internal topics with empty state from the inputs' committed offsets; "+
			"the old topics stay until `router reset --route %s --stale --config %s` removes them", path, route, route, path),
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Render writes changes as text: one line per change, then the summary
// and the remedies.
func Render(changes []Change, remedies []string) string {
	var b strings.Builder
	if len(changes) == 0 {
		b.WriteString("no changes\n")
		return b.String()
	}
	for _, c := range changes {
		fmt.Fprintf(&b, "%-9s %s", c.Class, c.Path)
		switch {
		case c.Detail != "":
			fmt.Fprintf(&b, ": %s", c.Detail)
		case c.Was != nil || c.Now != nil:
			fmt.Fprintf(&b, ": %s -> %s", compact(c.Was), compact(c.Now))
		}
		if c.Note != "" {
			fmt.Fprintf(&b, "\n          %s", c.Note)
		}
		b.WriteString("\n")
	}
	s := Summary(changes)
	fmt.Fprintf(&b, "%d live, %d new state, %d breaking\n", s[Live], s[NewState], s[Breaking])
	for _, r := range remedies {
		fmt.Fprintf(&b, "remedy: %s\n", r)
	}
	return b.String()
}

// compact renders a value on one line, JSON for anything structured.
func compact(v any) string {
	if v == nil {
		return "(none)"
	}
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 160 {
		return string(b[:157]) + "..."
	}
	return string(b)
}
