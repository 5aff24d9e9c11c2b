package plan

import (
	"fmt"

	"github.com/sidestream/sidestream/internal/config"
)

// TopicFromNode is a route's topic computed per record: the expression,
// its allow-list and what a topic that does not exist does.
type TopicFromNode struct {
	Expr  *config.Expr
	Allow *config.TopicAllow
	// Create: a missing topic is created with the route's topic settings
	// (missing: create); else the record goes to dirty (require).
	Create bool
	// Reserved are the topology's own topics (inputs, fixed outputs,
	// dirty, internal topics): a computed topic may be none of them.
	Reserved map[string]bool
}

func (t *Plan) compileTopicFrom(r config.Route) (*TopicFromNode, error) {
	tf := r.TopicFrom
	x, err := t.compileExpr(tf.Expr, false)
	if err != nil {
		return nil, fmt.Errorf("route %q topic_from.expr: %w", r.Name, err)
	}
	allow, err := config.NewTopicAllow(tf.Allow, tf.AllowRegex)
	if err != nil {
		return nil, fmt.Errorf("route %q topic_from: %w", r.Name, err)
	}
	return &TopicFromNode{Expr: x, Allow: allow, Create: tf.Missing == config.MissingCreate}, nil
}

// Pattern is how the computed topic is drawn: its allow-list, in braces.
func (n *TopicFromNode) Pattern() string { return "{" + n.Allow.String() + "}" }

// ComputedRoutes lists the routes whose topic is computed per record.
func (t *Plan) ComputedRoutes() []*RouteNode {
	var out []*RouteNode
	for _, r := range t.Routes {
		if r.TopicFrom != nil {
			out = append(out, r)
		}
	}
	return out
}

// reserveTopics hands each computed route the topics it may never
// compute: the topology's own.
func (t *Plan) reserveTopics() {
	cs := t.ComputedRoutes()
	if len(cs) == 0 {
		return
	}
	res := map[string]bool{}
	for _, s := range [][]string{t.InputTopics(), t.OutputTopics()} {
		for _, x := range s {
			res[x] = true
		}
	}
	rep, cl := t.InternalTopics()
	for _, s := range [][]string{rep, cl} {
		for _, x := range s {
			res[x] = true
		}
	}
	for _, r := range cs {
		r.TopicFrom.Reserved = res
	}
}

// CreateConfigsOf are the configs a computed topic of route r is created
// with: topics.configs, then the route's topic_configs.
func (t *Plan) CreateConfigsOf(r *RouteNode) map[string]*string {
	out := map[string]*string{}
	for _, m := range []map[string]string{t.Settings.Topics.Configs, r.TopicConfigs} {
		for k, v := range m {
			out[k] = &v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
