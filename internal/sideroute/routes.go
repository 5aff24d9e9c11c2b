package sideroute

import (
	"fmt"
	"strings"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
)

// Kinds of Target.
const (
	KindRoute = "route" // an ordinary route (window routes: their results)
	KindDirty = "dirty" // the dirty route
	KindLate  = "late"  // the late route of a window route
	// The side routes of an assembly route.
	KindIncomplete = "incomplete" // assemblies whose TTL passed
	KindDuplicate  = "duplicate"  // parts of an ID completed within the retention
	// KindOverflow: records a full window or assembly task refused
	// (limits.on_overflow: route).
	KindOverflow = "overflow"
	// KindComputed: a route whose topic is computed per record; its
	// Topic is the pattern, and each topic it writes is a KindRoute
	// target of its own name (Resolve).
	KindComputed = "computed"
)

// OverflowSuffix names a route's overflow route: "revenue.overflow".
const OverflowSuffix = config.OverflowSuffix

// LateSuffix names a window route's late route: "revenue.late". Route
// names cannot hold a dot, so it never clashes with a route.
const LateSuffix = ".late"

// Suffixes of an assembly route's side routes: "orders.incomplete".
const (
	IncompleteSuffix = ".incomplete"
	DuplicateSuffix  = ".duplicate"
)

// Target is a route's topic as tail and redrive address it.
type Target struct {
	Name  string `json:"name"`
	Topic string `json:"topic"`
	Kind  string `json:"kind"`
	// Window is the window route a late route belongs to.
	Window string `json:"window,omitempty"`
	// Route is the window or assembly route an overflow route belongs to.
	Route string `json:"route,omitempty"`
	// Assembly is the assembly route an incomplete or duplicate route
	// belongs to.
	Assembly string `json:"assembly,omitempty"`
}

// Targets lists every addressable route of top in config order, then the
// dirty route, then the late, incomplete, duplicate and overflow routes.
func Targets(top *plan.Plan) []Target {
	var out, late []Target
	for _, r := range top.Routes {
		if r.TopicFrom != nil {
			out = append(out, Target{Name: r.Name, Topic: r.TopicFrom.Pattern(), Kind: KindComputed})
			continue
		}
		out = append(out, Target{Name: r.Name, Topic: r.Topic, Kind: KindRoute})
		if r.Window != nil && r.Window.Spec.LateTopic != "" {
			late = append(late, Target{Name: r.Name + LateSuffix, Topic: r.Window.Spec.LateTopic, Kind: KindLate, Window: r.Name})
		}
		if a := r.Assembly; a != nil {
			if a.Spec.IncompleteTopic != "" {
				late = append(late, Target{Name: r.Name + IncompleteSuffix, Topic: a.Spec.IncompleteTopic, Kind: KindIncomplete, Assembly: r.Name})
			}
			if a.Spec.DuplicateTopic != "" {
				late = append(late, Target{Name: r.Name + DuplicateSuffix, Topic: a.Spec.DuplicateTopic, Kind: KindDuplicate, Assembly: r.Name})
			}
		}
		if ot := r.OverflowTopic(); ot != "" {
			late = append(late, Target{Name: r.Name + OverflowSuffix, Topic: ot, Kind: KindOverflow, Route: r.Name})
		}
	}
	out = append(out, Target{Name: "dirty", Topic: top.Dirty.Topic, Kind: KindDirty})
	return append(out, late...)
}

// Resolve finds a target by name. "late" alone names the late route when
// the topology has exactly one and no route is called "late". An unknown
// name is an error that lists the known ones.
func Resolve(top *plan.Plan, name string) (Target, error) {
	ts := Targets(top)
	var lates []Target
	for _, t := range ts {
		if t.Name == name && t.Kind == KindComputed {
			return Target{}, fmt.Errorf("route %q computes its topic per record (%s): name one of the topics it writes", name, t.Topic)
		}
		if t.Name == name {
			return t, nil
		}
		if t.Kind == KindLate {
			lates = append(lates, t)
		}
	}
	if name == "late" && len(lates) == 1 {
		return lates[0], nil
	}
	for _, r := range top.ComputedRoutes() {
		// A computed topic is named by itself: its route's allow-list
		// admits it.
		if plan.TopicNameProblem(name) == "" && !r.TopicFrom.Reserved[name] && r.TopicFrom.Allow.Allows(name) {
			return Target{Name: name, Topic: name, Kind: KindRoute, Route: r.Name}, nil
		}
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name + " (" + t.Topic + ")"
	}
	if name == "" {
		return Target{}, fmt.Errorf("a route is required; this topology has: %s", strings.Join(names, ", "))
	}
	return Target{}, fmt.Errorf("unknown route %q; this topology has: %s", name, strings.Join(names, ", "))
}
