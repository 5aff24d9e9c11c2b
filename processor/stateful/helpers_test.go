package stateful

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/pipeline"
	"github.com/sidestream/sidestream/pipeline/pipelinetest"
	"github.com/sidestream/sidestream/topology"
)

// Stage one's shared test helpers (pipelinetest), by the names the tests
// of stage two use (as in the processor's tests).
const (
	tsMillis = pipelinetest.TSMillis
)

type fataler = pipelinetest.Fataler

var (
	topo          = pipelinetest.Topo
	recordTime    = pipelinetest.RecordTime
	header        = pipelinetest.Header
	checkOutputs  = pipelinetest.CheckOutputs
	checkEnvelope = pipelinetest.CheckEnvelope
	fuzzSeeds     = pipelinetest.FuzzSeeds
	loop          = pipelinetest.Loop
	exampleAt     = pipelinetest.ExampleAt
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// checkConserved is pipelinetest.CheckConserved with stage one's
// RecordSize.
func checkConserved(t fataler, top *topology.Topology, r *kgo.Record, outs []*kgo.Record, tally *metrics.Tally) {
	t.Helper()
	pipelinetest.CheckConserved(t, top, r, outs, tally, pipeline.RecordSize)
}

func newEngine(t *topology.Topology) *engine { return &engine{pipeline.New(t)} }
