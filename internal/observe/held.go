package observe

import (
	"sort"
	"strings"
)

// A held route is a stateful route whose stored state was written with
// another spec (a breaking change): it does not process, every other
// route goes on. The observer publishes it in three places, under its
// one lock: /readyz (not ready, naming the route, the difference and the
// remedies), /tasks (its partitions' route_held) and the
// sidestream_route_held gauge.

// heldRoute is one held route: its repartition topic and why.
type heldRoute struct {
	topic, why string
}

// HoldRoute publishes a held route: why says what differs and the
// remedies. The router is not ready while a route is held.
func (o *Observer) HoldRoute(route, topic, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held[route] = heldRoute{topic: topic, why: why}
	if o.routeHeld != nil {
		o.routeHeld.WithLabelValues(route).Set(1)
	}
	for k, t := range o.tasks {
		if k.topic == topic {
			t.RouteHeld = why
		}
	}
	o.ready.setLocked(false, o.heldReasonLocked())
}

// HeldRoutes are the held routes, sorted.
func (o *Observer) HeldRoutes() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.held))
	for r := range o.held {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// heldReasonLocked is /readyz's reason while routes are held ("" when
// none is): each route and why, the other routes said to go on.
func (o *Observer) heldReasonLocked() string {
	if len(o.held) == 0 {
		return ""
	}
	routes := make([]string, 0, len(o.held))
	for r := range o.held {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	parts := make([]string, 0, len(routes))
	for _, r := range routes {
		parts = append(parts, "route "+r+" held: "+o.held[r].why)
	}
	return strings.Join(parts, "; ") + "; every other route is processing"
}

// heldTopicLocked is why topic's route is held, "" when it is not.
func (o *Observer) heldTopicLocked(topic string) string {
	for _, h := range o.held {
		if h.topic == topic {
			return h.why
		}
	}
	return ""
}
