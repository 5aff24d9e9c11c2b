package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/observe"
	"github.com/sidestream/sidestream/internal/plan"
)

// routing is one version of stage one: the plan a batch is routed by and
// its engine. The processor holds the running one (Processor.routing)
// and at most one a reload prepared (nextRouting).
type routing struct {
	top *plan.Plan
	eng *stageOne
	// installed is closed when the commit loop routes with it.
	installed chan struct{}
}

// ErrNotStarted is Reload's error before Run has checked and created the
// topics (or after it returned): there is no stage one to swap yet.
var ErrNotStarted = errors.New("the router has not started processing yet")

// Version is the plan version stage one routes with now: the content
// fingerprint every output's wire.HeaderTopologyVersion names.
func (p *Processor) Version() string { return p.routing.Load().top.Version }

// Reload makes next's stage one route every record from the next commit
// interval on, and returns once the commit loop routes with it (or ctx
// ends: then it is withdrawn, unless already installed). The caller has
// checked next with plan.ReloadRefusals: next differs from the running
// plan in stage one alone (settings, inputs and stage two are the ones
// the processor started with). Before the swap, next's missing output
// topics are created, their record limits read and its avro routes'
// schemas registered, so the loop pays only a pointer swap. Reloads
// must not run concurrently (a later one replaces one not installed).
func (p *Processor) Reload(ctx context.Context, next *plan.Plan) error {
	adm := p.started.Load()
	if adm == nil {
		return ErrNotStarted
	}
	eng, err := newStageOne(next, p.m, p.resolver)
	if err != nil {
		return err
	}
	// next's lookup() reads the tables the processor loaded and follows
	// (a reload cannot change tables:), as the started plan's does.
	if ts := p.tables.Load(); ts != nil {
		next.BindTables(ts.lookup)
		next.BindTableFields(ts.field)
	}
	md, err := adm.ListTopics(ctx, next.OutputTopics()...)
	if err != nil {
		return fmt.Errorf("list the output topics: %w", err)
	}
	if err := p.ensureOutputs(ctx, adm, next, md); err != nil {
		return err
	}
	if limits, _, err := p.outputLimits(ctx, adm, next); err != nil {
		p.log.Warn("could not read the output topics' max.message.bytes; the reloaded outputs are bounded by the config alone", "err", err)
	} else {
		eng.SetOutputLimits(limits)
	}
	if err := registerForReload(ctx, next, eng); err != nil {
		return err
	}
	p.m.Preset(observe.Series(next))
	r := &routing{top: next, eng: eng, installed: make(chan struct{})}
	p.nextRouting.Store(r)
	select {
	case <-r.installed:
		return nil
	case <-ctx.Done():
		if p.nextRouting.CompareAndSwap(r, nil) {
			return fmt.Errorf("no commit interval ended before the reload gave up (%w): the running version goes on", ctx.Err())
		}
		<-r.installed // the loop took it: it closes installed at once
		return nil
	}
}

// registerForReload registers next's avro routes' schemas (once: a
// registry that does not answer fails the reload, the running version
// goes on) and hands their ids to eng.
func registerForReload(ctx context.Context, next *plan.Plan, eng *stageOne) error {
	routes := next.AvroRoutes()
	if len(routes) == 0 {
		return nil
	}
	cl, err := kclient.RegistryClient(next.Settings.SchemaRegistry)
	if err != nil {
		return err
	}
	ids := make(map[string]int, len(routes))
	if err := registerEach(ctx, cl, routes, ids); err != nil {
		return err
	}
	eng.avroIDs.Set(ids)
	return nil
}

// installRouting makes a prepared reload the running stage one. Only the
// commit loop calls it, where no interval is open and no batch runs.
func (p *Processor) installRouting() {
	if r := p.nextRouting.Swap(nil); r != nil {
		p.routing.Store(r)
		close(r.installed)
		p.log.Debug("topology version routing", "version", r.top.Version)
	}
}
