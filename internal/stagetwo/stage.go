// Package stateful is stage two of the runtime: the window and assembly
// routes over their repartition topics (or, with repartition: false, in
// the input partition's own batch). It holds their tasks (one
// tasks.Set per stage: build under a generation, restore, close on drop,
// changelog records, checkpoint), the changelog-loss policy, late,
// incomplete and duplicate records, idle advance, the assembly TTL tick
// and the state queries.
//
// It never ends a transaction and holds no client of its own: what it
// needs of the runtime (the restore of a store, the observer of /tasks,
// the partition assignment, the source tracker's witnesses, the admin
// client) is the Runtime interface, which the processor implements. A
// store error is returned, never a dirty record: the caller aborts the
// batch. The package imports nothing of the processor (depguard).
package stagetwo

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/wire"
)

// Runtime is what stage two needs of the processor that runs it.
type Runtime interface {
	// Restore opens (OpenStore) and rebuilds the store of one changelog
	// partition, returning it with the facts of the restore.
	Restore(ctx context.Context, route, changelogTopic string, part int32) (changelog.Store, Restored, error)
	// Kept accounts for a restore whose task was kept (a build a drop
	// raced with is discarded, and its restore counts for nothing): the
	// records it applied and how long the build took.
	Kept(route string, res Restored, d time.Duration)
	Observer
	// Assigned reports whether this instance owns topic/part now.
	Assigned(topic string, part int32) bool
	// Hold and Holds are the source tracker's state witnesses of the
	// direct routes: the changelog partition of rep/part holds state.
	Hold(rep string, part int32, route string)
	Holds(rep string, part int32) bool
	// Admin is the session's admin client (nil before Run connects).
	Admin() *kadm.Client
}

// Observer publishes a task's row of /tasks.
type Observer interface {
	Window(topic string, part int32, route string, wm *int64, open, entries int, bytes int64)
	Assembly(topic string, part int32, route string, clock *int64, open, entries int, bytes int64)
	HeldBy(topic string, part int32, src string, at *int64)
	LocalCheckpoint(topic string, part int32, off *int64)
	SetLost(topic string, part int32, why string)
	ClearLost(topic string, part int32)
}

// Restored are the facts of one restore: the records applied, the offset
// it started from, and the log start offset a changelog loss was
// accepted at (NoMark: none).
type Restored struct {
	N      int
	From   int64
	Accept int64
}

// Config is what New builds a stage from.
type Config struct {
	Topology *plan.Plan
	Engine   *stageone.Engine
	Runtime  Runtime
	Log      *slog.Logger
	Metrics  *metrics.Metrics
	// Partitioner is the producer's: direct routes and state queries
	// locate keys with it.
	Partitioner kgo.Partitioner
	// Stores opens window stores, AssemblyStores assembly stores.
	Stores, AssemblyStores changelog.Builder
	// OwnerURL is the template of a state query's owner URL (CheckOwnerURL).
	OwnerURL string
	// Clock is the processing-time clock: an assembly part's arrival
	// (time: processing), the sources heard and the records seen for
	// idle_timeout (default time.Now; router test drives a virtual one).
	Clock func() time.Time
	// Tracer makes the spans of window results, assemblies and late
	// records; nil makes none (the trace contexts travel all the same).
	Tracer Tracer
	// TraceLinks is how many trace contexts a window keeps beyond its
	// first input's, for its result span's links (0 with spans off).
	TraceLinks int
}

// Tracer makes stage two's spans; internal/tracing implements it.
type Tracer interface {
	// Continue is the trace context a window result or an assembly
	// (kind "window", "assembly") carries: parent, the first input's,
	// when it makes no span; else that of the span it made, a child of
	// parent linked to the other inputs' contexts (binary,
	// wire.TraceContextFromBinary).
	Continue(kind, route, topic string, parent wire.TraceContext, links [][]byte) wire.TraceContext
	// Late notes a late record of route, as written to the late topic.
	Late(route string, r *kgo.Record)
}

// Stage is stage two of one processor: its window and assembly tasks.
type Stage struct {
	top       *plan.Plan
	eng       *recordRunner
	rt        Runtime
	log       *slog.Logger
	m         *metrics.Metrics
	part      kgo.Partitioner
	asmStores changelog.Builder
	ownerURL  string
	ws        *windowStage
	as        *assemblyStage
}

// recordRunner runs stage two's records with stage one's helpers (dirty
// records, field decoding, aggregate values, the record size ceiling).
type recordRunner struct {
	*stageone.Engine
	now    func() time.Time // Config.Clock
	tracer Tracer           // Config.Tracer, nil: no spans
}

// New builds the stage of a topology; it does not restore anything.
func New(c Config) (*Stage, error) {
	ws, err := newWindowStage(c.Topology, c.Stores, 1+c.TraceLinks)
	if err != nil {
		return nil, err
	}
	as, err := newAssemblyStage(c.Topology)
	if err != nil {
		return nil, err
	}
	now := c.Clock
	if now == nil {
		now = time.Now
	}
	return &Stage{top: c.Topology, eng: &recordRunner{Engine: c.Engine, now: now, tracer: c.Tracer}, rt: c.Runtime, log: c.Log, m: c.Metrics,
		part: c.Partitioner, asmStores: c.AssemblyStores, ownerURL: c.OwnerURL, ws: ws, as: as}, nil
}

// SetPartitions records the partition count of every repartition and
// changelog topic, once the internal topics are ensured.
func (s *Stage) SetPartitions(n int32) { s.ws.partitions.Store(n) }

// Partitions is the partition count of the internal topics, 0 before
// SetPartitions.
func (s *Stage) Partitions() int32 { return s.ws.partitions.Load() }

// SetSources sets the input partitions (SourceID) every aligned window
// task's watermark waits for.
func (s *Stage) SetSources(src []string) { s.ws.setSources(src) }

// HasWindows reports whether the topology has a window route.
func (s *Stage) HasWindows() bool { return len(s.ws.routes) > 0 }

// HasDirect reports whether a window or assembly route has no
// repartition topic (repartition: false).
func (s *Stage) HasDirect() bool { return len(s.ws.direct)+len(s.as.direct) > 0 }

// HasDirectAssemblies reports whether an assembly route has no
// repartition topic.
func (s *Stage) HasDirectAssemblies() bool { return len(s.as.direct) > 0 }

// IsRepartition reports whether topic is read by stage two: the
// repartition topic of a window or assembly route.
func (s *Stage) IsRepartition(topic string) bool {
	return s.ws.isRepartition(topic) || s.as.isRepartition(topic)
}

// MarkTopics are the repartition topics that read marks: those of the
// aligned window routes with a repartition topic.
func (s *Stage) MarkTopics() []string {
	var out []string
	for topic, wr := range s.ws.routes {
		if wr.rt.Window.Spec.Watermark == plan.WatermarkAligned && !wr.rt.Window.Direct {
			out = append(out, topic)
		}
	}
	return out
}
