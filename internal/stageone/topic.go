package stageone

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"

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

// maxKnownTopics bounds the names a computed route remembers as checked
// (knownTopics): past it, a new name is checked on each of its records,
// and the resolver asked, as the first time.
const maxKnownTopics = 1000

// knownTopic is a computed name that passed its checks (a valid topic
// name, allowed, none of the topology's own), interned: the records of
// one topic share its string.
type knownTopic struct {
	name string
	// resolved: the resolver found the topic (or created it). It is not
	// asked again, as its own cache would not ask the brokers again: a
	// topic deleted later fails its produce as a fixed topic's would.
	resolved atomic.Bool
}

// knownTopics are the names one computed route has checked, read
// without a lock: a map replaced whole on each addition (at most
// maxKnownTopics, each added once).
type knownTopics struct {
	m  atomic.Pointer[map[string]*knownTopic]
	mu sync.Mutex
}

// lookup is name's entry, nil when it is not known; name is the bytes a
// FastString appended (the map index does not allocate).
func (k *knownTopics) lookup(name []byte) *knownTopic {
	if m := k.m.Load(); m != nil {
		return (*m)[string(name)]
	}
	return nil
}

// get is lookup for a name as a string.
func (k *knownTopics) get(name string) *knownTopic {
	if m := k.m.Load(); m != nil {
		return (*m)[name]
	}
	return nil
}

// add remembers name, which passed its checks, and returns its entry;
// nil past maxKnownTopics.
func (k *knownTopics) add(name string) *knownTopic {
	k.mu.Lock()
	defer k.mu.Unlock()
	old := k.m.Load()
	var m map[string]*knownTopic
	if old != nil {
		if t := (*old)[name]; t != nil {
			return t
		}
		if len(*old) >= maxKnownTopics {
			return nil
		}
		m = maps.Clone(*old)
	} else {
		m = map[string]*knownTopic{}
	}
	t := &knownTopic{name: name}
	m[name] = t
	k.m.Store(&m)
	return t
}

// topicForm is how stage one computes a route's topic: the expression's
// fast form (nil when it has none) and the names checked so far.
type topicForm struct {
	fast  plan.FastString
	known knownTopics
}

// computeTopic evaluates route rt's topic expression and checks the name
// it yields: a valid topic name, on the allow-list, none of the
// topology's own topics. A name checked before is not checked again
// (tf.known). Whether it exists is the resolver's question
// (resolveTopics), asked once per record after routing.
func (re *evalState) computeTopic(rt *plan.RouteNode, tf *topicForm) (string, *knownTopic, *RecordError) {
	if tf.fast != nil && re.d.vals != nil {
		if b, ok := tf.fast(re.topicBuf[:0], re.d.vals); ok {
			re.topicBuf = b
			if k := tf.known.lookup(b); k != nil {
				return k.name, k, nil
			}
			return checkTopic(rt, tf, string(b))
		}
	}
	x := rt.TopicFrom.Expr
	res, err := re.eval(x, nil)
	if err != nil {
		return "", nil, recErr(wire.StageRoute, wire.ReasonTopicInvalid, "route %q: topic_from.expr %q: %s", rt.Name, x.Source, firstLine(err))
	}
	topic, ok := res.(string)
	if !ok {
		return "", nil, recErr(wire.StageRoute, wire.ReasonTopicInvalid, "route %q: topic_from.expr %q returned %T, not a string", rt.Name, x.Source, res)
	}
	return checkTopic(rt, tf, topic)
}

// checkTopic checks a computed name and remembers it when it passes.
func checkTopic(rt *plan.RouteNode, tf *topicForm, topic string) (string, *knownTopic, *RecordError) {
	if k := tf.known.get(topic); k != nil {
		return k.name, k, nil
	}
	if p := plan.TopicNameProblem(topic); p != "" {
		return "", nil, recErr(wire.StageRoute, wire.ReasonTopicInvalid, "route %q: computed topic %q is not a valid topic name: %s", rt.Name, shorten(topic, 300), p)
	}
	if rt.TopicFrom.Reserved[topic] {
		return "", nil, recErr(wire.StageRoute, wire.ReasonTopicNotAllowed, "route %q: computed topic %q is one of the topology's own topics (an input, a fixed output, dirty or internal)", rt.Name, topic)
	}
	if a := rt.TopicFrom.Allow; !a.Allows(topic) {
		return "", nil, recErr(wire.StageRoute, wire.ReasonTopicNotAllowed, "route %q: computed topic %q is not on its allow-list %s", rt.Name, topic, a)
	}
	if k := tf.known.add(topic); k != nil {
		return k.name, k, nil
	}
	return topic, nil, nil
}

// resolveTopics asks the resolver about each computed topic of a routed
// record that it has not found before; one missing or refused makes the
// whole record dirty (no partial fan-out). An error that is not the
// record's is returned as is.
func (e *Engine) resolveTopics(ctx context.Context, outs []output) (*RecordError, error) {
	for _, o := range outs {
		if o.Route.TopicFrom == nil || o.known != nil && o.known.resolved.Load() {
			continue
		}
		err := ErrTopicMissing
		if e.topics != nil {
			err = e.topics.Resolve(ctx, o.Route, o.Topic)
		}
		if err == nil {
			if o.known != nil {
				o.known.resolved.Store(true)
			}
			continue
		}
		return unresolved(o, err)
	}
	return nil, nil
}

// unresolved is the resolver's err about o's topic: the record's
// (topic_missing, topic_create_refused) or the batch's.
func unresolved(o output, err error) (*RecordError, error) {
	var refused *TopicRefusedError // escapes: declared only on this path
	switch {
	case errors.Is(err, ErrTopicMissing):
		return recErr(wire.StageRoute, wire.ReasonTopicMissing, "route %q: computed topic %q does not exist (topic_from.missing: require)", o.Route.Name, o.Topic), nil
	case errors.As(err, &refused):
		return recErr(wire.StageRoute, wire.ReasonTopicCreateRefused, "route %q: computed topic %q: %v", o.Route.Name, o.Topic, refused), nil
	}
	return nil, err
}
