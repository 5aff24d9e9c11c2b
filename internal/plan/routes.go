package plan

import "github.com/sidestream/sidestream/internal/config"

// AvroRoutes lists the avro routes, in config order.
func (t *Plan) AvroRoutes() []*RouteNode {
	var out []*RouteNode
	for _, r := range t.Routes {
		if r.Avro != nil {
			out = append(out, r)
		}
	}
	return out
}

// StateLimits returns the limits of a window or assembly route, nil when
// it has none.
func (r *RouteNode) StateLimits() *config.Limits {
	switch {
	case r.Window != nil:
		return r.Window.Spec.Limits
	case r.Assembly != nil:
		return r.Assembly.Spec.Limits
	}
	return nil
}

// OverflowTopic is the topic of the route's overflow route, "" when it
// has none (no limits, or on_overflow: evict).
func (r *RouteNode) OverflowTopic() string {
	if l := r.StateLimits(); l != nil && l.OnOverflow == config.OverflowRoute {
		return l.OverflowTopic
	}
	return ""
}

// CreateConfigs are the configs the router creates topic with:
// topics.configs, then the override of the route (or side route) that
// writes it; repartition topics and changelogs get their fixed settings
// over both.
func (t *Plan) CreateConfigs(topic string) map[string]*string {
	out := map[string]*string{}
	set := func(m map[string]string) {
		for k, v := range m {
			out[k] = &v
		}
	}
	set(t.Settings.Topics.Configs)
	for _, r := range t.Routes {
		if r.Topic == topic {
			set(r.TopicConfigs)
		}
		if r.Window != nil && r.Window.Spec.LateTopic == topic {
			set(r.Window.Spec.LateTopicConfigs)
		}
	}
	if t.Dirty.Topic == topic {
		set(t.Dirty.TopicConfigs)
	}
	repartitionConfigs, changelogConfigs := config.InternalTopicConfigs()
	rep, cl := t.InternalTopics()
	for _, r := range rep {
		if r == topic {
			set(repartitionConfigs)
		}
	}
	for _, c := range cl {
		if c == topic {
			set(changelogConfigs)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// InputStart is where a new group starts on an input topic ("" for a
// topic that is not an input).
func (t *Plan) InputStart(topic string) string {
	for _, in := range t.Inputs {
		if in.Topic == topic {
			return in.Start
		}
	}
	return ""
}

// GapPolicy is what a gap in topic does: the input's on_gap; for a
// repartition topic, fail when any input says fail (it carries their
// records), skip otherwise.
func (t *Plan) GapPolicy(topic string) string {
	policy := config.GapSkip
	for _, in := range t.Inputs {
		if in.Topic == topic {
			return in.OnGap
		}
		if in.OnGap == config.GapFail {
			policy = config.GapFail
		}
	}
	return policy
}

// DirtyRoute is the route name the dirty topic's written records are
// counted under.
const DirtyRoute = "dirty"

// Writers maps every topic the topology writes records to (OutputTopics)
// to the route that owns it: a route's own topic, its late, overflow,
// incomplete and duplicate topics are the route's, the dirty topic is
// DirtyRoute's. Validation lets one part only write to a topic, so the
// map is one-to-one on topics.
func (t *Plan) Writers() map[string]string {
	out := map[string]string{t.Dirty.Topic: DirtyRoute}
	for _, r := range t.Routes {
		out[r.Topic] = r.Name
		if r.Window != nil && r.Window.Spec.LateTopic != "" {
			out[r.Window.Spec.LateTopic] = r.Name
		}
		if ot := r.OverflowTopic(); ot != "" {
			out[ot] = r.Name
		}
		if a := r.Assembly; a != nil {
			if a.Spec.IncompleteTopic != "" {
				out[a.Spec.IncompleteTopic] = r.Name
			}
			if a.Spec.DuplicateTopic != "" {
				out[a.Spec.DuplicateTopic] = r.Name
			}
		}
	}
	return out
}
