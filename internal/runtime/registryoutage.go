package runtime

import (
	"context"
	"fmt"

	"github.com/sidestream/sidestream/internal/observe"
)

// A batch that a registry-backed input could not decode because the
// schema registry could not answer (unreachable, timed out, 5xx, auth;
// registry.IsRetryable) is not a bad record: nothing of it is dirtied
// or committed. The loop abandons it (exactly-once: the transaction
// aborts and the consumer rewinds to the committed offsets; at-least-once:
// nothing is committed and the session is rebuilt, reading from the
// committed offsets), counts the abort (registry_unavailable), says why
// on /readyz, and waits 1 s, doubling to 8 s while the outage lasts,
// before the batch is processed again.

// registryAborted accounts for a transaction aborted by a registry
// outage and waits; the session goes on.
func (c *eosCommitter) registryAborted(ctx context.Context, err error) error {
	p := c.p
	p.dropState(nil)
	p.gaps.rewind(c.sess.Client().CommittedOffsets())
	p.registryOutage(ctx, err)
	return nil
}

// registryAborted waits, then ends the session: the next one reads the
// batch again from the committed offsets (Run goes on at once).
func (c *aloCommitter) registryAborted(ctx context.Context, err error) error {
	c.p.registryOutage(ctx, err)
	return fmt.Errorf("schema registry: %w", err)
}

// registryOutage counts the abort, publishes the reason and backs off.
func (p *Processor) registryOutage(ctx context.Context, err error) {
	p.registryDown = true
	wait := p.registryRetry.Next()
	p.m.Aborts.WithLabelValues(observe.AbortRegistryUnavailable).Inc()
	p.obs.NotReady(fmt.Sprintf("schema registry %s unavailable: %v; the batch was aborted (nothing dirtied, nothing committed) and is tried again in %s",
		p.top.Settings.SchemaRegistry.URL, err, wait))
	p.log.Error("schema registry unavailable; batch aborted, it will be processed again", "url", p.top.Settings.SchemaRegistry.URL, "err", err, "backoff", wait)
	p.idle(ctx, wait)
}

// readyAfterCommit marks the router ready after a commit, except while a
// registry outage lasts: an empty interval commits without asking the
// registry, so only a commit that processed records ends the outage.
func (p *Processor) readyAfterCommit(c committer, hadRecords bool) {
	if p.registryDown {
		if !hadRecords {
			return
		}
		p.registryDown = false
		p.registryRetry.Reset()
		p.log.Info("schema registry answers again; processing goes on")
	}
	p.markReady(c.client())
}
