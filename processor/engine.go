package processor

import (
	"github.com/sidestream/sidestream/pipeline"
	"github.com/sidestream/sidestream/topology"
)

// engine is stage one, the embedded pipeline.Engine (decode, route,
// parts, dirty records); stage two (processor/stateful) runs on the same
// pipeline.Engine.
type engine struct {
	*pipeline.Engine
}

func newEngine(t *topology.Topology) *engine {
	return &engine{Engine: pipeline.New(t)}
}
