package reset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sidestream/sidestream/internal/plan"
)

// RouteTopics are the internal topics of one stateful route of top: its
// repartition topic ("" for a route without one) and its changelog
// topic, those of its current state version.
func RouteTopics(top *plan.Plan, route string) (repartition, changelog string, err error) {
	var names []string
	for _, r := range top.Routes {
		switch {
		case r.Window != nil:
			names = append(names, r.Name)
			if r.Name == route {
				return direct(r.Window.Direct, r.Window.RepartitionTopic), r.Window.ChangelogTopic, checkDirect(r.Name, r.Window.Direct)
			}
		case r.Assembly != nil:
			names = append(names, r.Name)
			if r.Name == route {
				return direct(r.Assembly.Direct, r.Assembly.RepartitionTopic), r.Assembly.ChangelogTopic, checkDirect(r.Name, r.Assembly.Direct)
			}
		}
	}
	if len(names) == 0 {
		return "", "", fmt.Errorf("route %q: the topology has no window or assembly route", route)
	}
	return "", "", fmt.Errorf("route %q is not a window or assembly route of the topology (those are: %s)", route, strings.Join(names, ", "))
}

func direct(d bool, topic string) string {
	if d {
		return ""
	}
	return topic
}

// checkDirect refuses a route without a repartition topic: the witness
// that its changelog holds state is in the input offsets' metadata
// (the processor's sources.go), which a reset of one route cannot
// rewrite without moving every other route's progress.
func checkDirect(route string, d bool) error {
	if d {
		return fmt.Errorf("route %q has no repartition topic (repartition: false): its state is witnessed in the input offsets, so it cannot be reset alone; use `router reset` for the whole application, or raise its state_version", route)
	}
	return nil
}

// NewRoutePlan works out the reset of one stateful route of top from
// what the cluster holds; it changes nothing. The route's changelog and
// repartition topics that exist are deleted and the group's offsets on
// its repartition topic with them; no input offset moves, no other
// route's topic or offset is touched. With stale, only the route's
// internal topics of its other state versions (left by a state_version
// change) are named, its current state kept.
func NewRoutePlan(ctx context.Context, adm *kadm.Client, top *plan.Plan, route string, stale bool) (*Plan, error) {
	rep, chg, err := RouteTopics(top, route)
	if err != nil {
		return nil, err
	}
	group := top.Settings.ApplicationID
	if err := groupIdle(ctx, adm, group); err != nil {
		return nil, err
	}
	p := &Plan{Group: group, Route: route, To: "unchanged"}
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	ours := map[string]bool{}
	reps, chgs := top.InternalTopics()
	for _, t := range append(reps, chgs...) {
		ours[t] = true
	}
	for _, t := range listed.Names() {
		switch {
		case !stale && (t == rep || t == chg):
		case stale && !ours[t] && plan.IsStateTopicOf(group, route, t):
		default:
			continue
		}
		p.Topics = append(p.Topics, t)
	}
	slices.Sort(p.Topics)
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("fetch committed offsets of group %s: %w", group, err)
	}
	for t := range committed {
		if slices.Contains(p.Topics, t) && strings.HasSuffix(t, "-repartition") {
			p.Offsets = append(p.Offsets, t)
		}
	}
	slices.Sort(p.Offsets)
	return p, nil
}
