package stageone

import (
	"context"
	"errors"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// TopicResolver answers whether a computed topic can be written: it
// exists, or it was created for route (missing: create). Stage one holds
// no client: the processor hands one in (WithTopics), which caches its
// answers so a record does not ask the broker. A *TopicRefusedError or
// ErrTopicMissing is the record's (dirty); any other error (a broker that
// does not answer, ctx's) is the batch's (BatchError: abort and retry).
type TopicResolver interface {
	Resolve(ctx context.Context, route *plan.RouteNode, topic string) error
}

// ErrTopicMissing: the computed topic does not exist and its route
// requires it (missing: require).
var ErrTopicMissing = errors.New("topic does not exist")

// TopicRefusedError is the brokers' refusal to create a computed topic
// (a create-topic policy, an authorization, a bad setting).
type TopicRefusedError struct{ Err error }

func (e *TopicRefusedError) Error() string {
	return "the brokers refused to create it: " + e.Err.Error()
}
func (e *TopicRefusedError) Unwrap() error { return e.Err }

// WithTopics sets the resolver of computed topics. A topology with a
// topic_from route needs one; without it, every computed topic reads as
// missing (a wiring mistake no data can reach: the processor sets it).
func WithTopics(r TopicResolver) Option {
	return func(e *Engine) { e.topics = r }
}

// computeTopic evaluates route rt's topic expression and checks the name
// it yields: a valid topic name, on the allow-list, none of the
// topology's own topics. Whether it exists is the resolver's question
// (resolveTopics), asked once per record after routing.
func (re *evalState) computeTopic(rt *plan.RouteNode) (string, *RecordError) {
	tf := rt.TopicFrom
	res, err := re.eval(tf.Expr, nil)
	if err != nil {
		return "", recErr(wire.StageRoute, wire.ReasonTopicInvalid, "route %q: topic_from.expr %q: %s", rt.Name, tf.Expr.Source, firstLine(err))
	}
	topic, ok := res.(string)
	if !ok {
		return "", recErr(wire.StageRoute, wire.ReasonTopicInvalid, "route %q: topic_from.expr %q returned %T, not a string", rt.Name, tf.Expr.Source, res)
	}
	if p := plan.TopicNameProblem(topic); p != "" {
		return "", recErr(wire.StageRoute, wire.ReasonTopicInvalid, "route %q: computed topic %q is not a valid topic name: %s", rt.Name, shorten(topic, 300), p)
	}
	if tf.Reserved[topic] {
		return "", recErr(wire.StageRoute, wire.ReasonTopicNotAllowed, "route %q: computed topic %q is one of the topology's own topics (an input, a fixed output, dirty or internal)", rt.Name, topic)
	}
	if !tf.Allow.Allows(topic) {
		return "", recErr(wire.StageRoute, wire.ReasonTopicNotAllowed, "route %q: computed topic %q is not on its allow-list %s", rt.Name, topic, tf.Allow)
	}
	return topic, nil
}

// resolveTopics asks the resolver about each computed topic of a routed
// record; one missing or refused makes the whole record dirty (no
// partial fan-out). An error that is not the record's is returned as is.
func (e *Engine) resolveTopics(ctx context.Context, outs []output) (*RecordError, error) {
	for _, o := range outs {
		if o.Route.TopicFrom == nil {
			continue
		}
		err := ErrTopicMissing
		if e.topics != nil {
			err = e.topics.Resolve(ctx, o.Route, o.Topic)
		}
		var refused *TopicRefusedError
		switch {
		case err == nil:
		case errors.Is(err, ErrTopicMissing):
			return recErr(wire.StageRoute, wire.ReasonTopicMissing, "route %q: computed topic %q does not exist (topic_from.missing: require)", o.Route.Name, o.Topic), nil
		case errors.As(err, &refused):
			return recErr(wire.StageRoute, wire.ReasonTopicCreateRefused, "route %q: computed topic %q: %v", o.Route.Name, o.Topic, refused), nil
		default:
			return nil, err
		}
	}
	return nil, nil
}
