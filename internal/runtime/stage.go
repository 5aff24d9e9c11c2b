package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/stagetwo"
)

// lossRecheck is how long Run waits, not ready, before it tries again a
// session that stopped on a changelog loss.
const lossRecheck = 30 * time.Second

// stageRuntime is what stage two (internal/stagetwo) gets of the
// processor: the restore, the observer, the assignment, the source
// tracker's witnesses and the admin client.
type stageRuntime struct{ p *Processor }

var _ stagetwo.Runtime = stageRuntime{}

func (r stageRuntime) Restore(ctx context.Context, route, changelogTopic string, part int32) (changelog.Store, stagetwo.Restored, error) {
	return r.p.restoreTask(ctx, route, changelogTopic, part)
}

func (r stageRuntime) Window(topic string, part int32, route string, wm *int64, open, entries int, bytes int64) {
	r.p.obs.Window(topic, part, route, wm, open, entries, bytes)
}

func (r stageRuntime) Assembly(topic string, part int32, route string, clock *int64, open, entries int, bytes int64) {
	r.p.obs.Assembly(topic, part, route, clock, open, entries, bytes)
}

func (r stageRuntime) HeldBy(topic string, part int32, src string, at *int64) {
	r.p.obs.HeldBy(topic, part, src, at)
}

func (r stageRuntime) LocalCheckpoint(topic string, part int32, off *int64) {
	r.p.obs.LocalCheckpoint(topic, part, off)
}

func (r stageRuntime) SetLost(topic string, part int32, why string) {
	r.p.obs.SetLost(topic, part, why)
}
func (r stageRuntime) ClearLost(topic string, part int32)        { r.p.obs.ClearLost(topic, part) }
func (r stageRuntime) Assigned(topic string, part int32) bool    { return r.p.obs.Assigned(topic, part) }
func (r stageRuntime) Hold(rep string, part int32, route string) { r.p.src.hold(rep, part, route) }
func (r stageRuntime) Holds(rep string, part int32) bool         { return r.p.src.holds(rep, part) }
func (r stageRuntime) Admin() *kadm.Client                       { return r.p.adm }

// restoreTask restores a fresh store from one changelog partition (its
// metrics are counted once the task is kept: Kept).
func (p *Processor) restoreTask(ctx context.Context, route, changelogTopic string, part int32) (changelog.Store, stagetwo.Restored, error) {
	st, err := p.stage.OpenStore(changelogTopic, part)
	if err != nil {
		return nil, stagetwo.Restored{Accept: stagetwo.NoMark}, fmt.Errorf("route %q partition %d: open state store: %w", route, part, err)
	}
	res, err := p.restoreState(ctx, route, changelogTopic, part, st)
	out := stagetwo.Restored{N: res.n, From: res.from, Accept: res.accept}
	if err != nil {
		_ = st.Close()
		return nil, out, err
	}
	return st, out, nil
}

// Kept counts a restore whose task the stage kept: restore metrics say
// what state a task was rebuilt with, not what a discarded build read.
func (r stageRuntime) Kept(route string, res stagetwo.Restored, d time.Duration) {
	r.p.m.RestoreDuration.Observe(d.Seconds())
	r.p.m.RestoredRecords.WithLabelValues(route).Add(float64(res.N))
}

// dropState forgets the state of every stateful stage and the source
// progress: all of it (nil) or that of the given partitions.
func (p *Processor) dropState(parts map[string][]int32) { p.src.drop(p.stage.Drop(parts)) }

// StateReaders returns every stateful operator's reader by operator name
// (stagetwo.Stage.StateReaders); the API serves them as GET
// /state/{operator}?key=K.
func (p *Processor) StateReaders() map[string]stagetwo.StateReader { return p.stage.StateReaders() }

// AssemblyHeld is what this process holds for one ID of an assembly
// route (stagetwo.Stage.AssemblyHeld); it serves GET /state/{route}.
func (p *Processor) AssemblyHeld(route, id string) (assembly.Held, bool, error) {
	return p.stage.AssemblyHeld(route, id)
}
