package processor

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/pipeline"
	"github.com/sidestream/sidestream/topology"
)

// engine is the record path of both stages: stage one is the embedded
// pipeline.Engine (decode, route, parts, dirty records); stage two's
// methods (windows.go, assemble.go, sources.go) run a record of a
// repartition topic through its task's operator.
type engine struct {
	*pipeline.Engine
}

func newEngine(t *topology.Topology) *engine {
	return &engine{Engine: pipeline.New(t)}
}

// processRepartitioned is stage two for one record of a repartition
// topic. A bad record is a dirty record; an error is the task's store
// failing, which may hold part of the record's writes: the batch aborts
// and the task is rebuilt from its changelog (never a dirty record).
func (e *engine) processRepartitioned(r *kgo.Record, t *windowTask, tally *metrics.Tally) ([]*kgo.Record, error) {
	if isMark(r) {
		return e.processMark(r, t, tally)
	}
	tally.Consumed[r.Topic]++
	return e.processWindow(r, t, tally)
}

// processAssemblyRecord is stage two of an assembly route for one record
// of its repartition topic, with processRepartitioned's contract.
func (e *engine) processAssemblyRecord(r *kgo.Record, t *assemblyTask, now time.Time, tally *metrics.Tally) ([]*kgo.Record, error) {
	tally.Consumed[r.Topic]++
	return e.processAssembly(r, t, now, tally)
}
