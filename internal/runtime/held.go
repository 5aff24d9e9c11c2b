package runtime

import (
	"context"
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/observe"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stagetwo"
)

// A route whose stored state was written with another spec (a breaking
// change, stagetwo.HeldError) is held: its repartition topic is paused in
// the consumer (kgo PauseFetchTopics) for the rest of the process's life,
// so none of its records is processed and its committed offsets do not
// move; every other route goes on processing and committing.
//
// Its records are kept, not lost: stage one goes on writing the route's
// records to its repartition topic in the same transaction as the input
// offsets, the repartition topic keeps them (retention -1; the purge
// deletes only below the group's committed offsets, which stay where the
// route stopped), and the route reads them once it runs again (a fixed
// spec), or they go with its repartition topic (router reset --route).
//
// The hold is met when the route's first task is built, inside a batch:
// that batch is abandoned (exactly-once: its transaction aborts and the
// consumer rewinds to the committed offsets; at-least-once: nothing is
// committed and the consumer rewinds in the session), the topic paused,
// and the batch processed again without it. A route without a
// repartition topic (repartition: false) runs inside its input
// partitions' batch, so it cannot be held alone: its error fails the
// session as any store error does.

// asHeld is err's held route, when it can be held alone.
func asHeld(err error) *stagetwo.HeldError {
	var he *stagetwo.HeldError
	if errors.As(err, &he) && !he.Direct {
		return he
	}
	return nil
}

// holdRoute pauses the held route's repartition topic in cl and
// publishes the hold (once per route: /readyz, /tasks, the gauge, an
// ERROR log line).
func (p *Processor) holdRoute(cl *kgo.Client, he *stagetwo.HeldError) {
	cl.PauseFetchTopics(he.Topic)
	p.heldMu.Lock()
	_, known := p.held[he.Route]
	p.held[he.Route] = he.Topic
	p.heldMu.Unlock()
	if known {
		return
	}
	p.m.Aborts.WithLabelValues(observe.AbortRouteHeld).Inc()
	why := heldWhy(he)
	p.obs.HoldRoute(he.Route, he.Topic, why)
	p.log.Error("route held: its state was written with a different spec; every other route goes on", "route", he.Route,
		"difference", he.Difference(), "remedies", strings.Join(plan.RouteRemedies(he.Route, "TOPOLOGY.yaml"), " | "))
}

// heldWhy is what /readyz and /tasks say of a held route.
func heldWhy(he *stagetwo.HeldError) string {
	return "its state was written with a different spec (" + he.Difference() + "); its records wait in " + he.Topic +
		", nothing of it is committed; remedies: " + strings.Join(plan.RouteRemedies(he.Route, "TOPOLOGY.yaml"), "; ") +
		"; or run the spec the state was written with"
}

// pauseHeld pauses, in a new session's client, the repartition topics of
// the routes held so far.
func (p *Processor) pauseHeld(cl *kgo.Client) {
	p.heldMu.Lock()
	defer p.heldMu.Unlock()
	for _, topic := range p.held {
		cl.PauseFetchTopics(topic)
	}
}

// held accounts for a batch abandoned on a held route (exactly-once: the
// transaction was aborted, the consumer rewound): the state in memory is
// dropped, the route paused; the session goes on.
func (c *eosCommitter) held(_ context.Context, he *stagetwo.HeldError) error {
	p := c.p
	p.dropState(nil)
	p.gaps.rewind(c.sess.Client().CommittedOffsets())
	p.holdRoute(c.sess.Client(), he)
	return nil
}

// held accounts for a batch abandoned on a held route (at-least-once:
// nothing was committed): the consumer is rewound to the committed
// offsets in the session (next), the state dropped, the route paused.
func (c *aloCommitter) held(_ context.Context, he *stagetwo.HeldError) error {
	p := c.p
	p.dropState(nil)
	c.failed = false // abandon's: the session goes on
	c.rewindDue = true
	p.holdRoute(c.cl, he)
	return nil
}
