package pipeline

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/pipeline/pipelinetest"
	"github.com/sidestream/sidestream/topology"
)

// The shared helpers (pipelinetest), by the short names these tests use.
const (
	examplesDir = pipelinetest.ExamplesDir
	withSchema  = pipelinetest.WithSchema
	tsMillis    = pipelinetest.TSMillis
	tsSecs      = pipelinetest.TSSecs
	tsRFC3339   = pipelinetest.TSRFC3339
	tsKafka     = pipelinetest.TSKafka
	tsNested    = pipelinetest.TSNested
	good        = pipelinetest.Good
)

type fataler = pipelinetest.Fataler

var (
	topo            = pipelinetest.Topo
	recordTime      = pipelinetest.RecordTime
	topics          = pipelinetest.Topics
	header          = pipelinetest.Header
	checkOutputs    = pipelinetest.CheckOutputs
	checkEnvelope   = pipelinetest.CheckEnvelope
	fuzzSeeds       = pipelinetest.FuzzSeeds
	loop            = pipelinetest.Loop
	exampleTopology = pipelinetest.ExampleTopology
)

// checkConserved is pipelinetest.CheckConserved with this package's
// RecordSize.
func checkConserved(t fataler, top *topology.Topology, r *kgo.Record, outs []*kgo.Record, tally *metrics.Tally) {
	t.Helper()
	pipelinetest.CheckConserved(t, top, r, outs, tally, RecordSize)
}
