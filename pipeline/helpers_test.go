package pipeline

import (
	"time"

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

// decode is decodeInto on a fresh Decoded, with its fields also as a map
// (Fields) of the fields the expressions see: a field absent or null is
// left out, as both read as nil.
func (d *decoder) decode(topic string, value []byte, ts time.Time) (*Decoded, *RecordError) {
	out := &Decoded{vals: make([]any, len(d.index))}
	if rerr := d.decodeInto(out, topic, value, ts); rerr != nil {
		return nil, rerr
	}
	out.Fields = map[string]any{}
	for name, i := range d.index {
		if out.vals[i] != nil {
			out.Fields[name] = out.vals[i]
		}
	}
	return out, nil
}
