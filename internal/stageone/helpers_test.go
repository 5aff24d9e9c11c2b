package stageone

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
)

// The shared helpers (stageonetest), by the short names these tests use.
const (
	examplesDir = stageonetest.ExamplesDir
	withSchema  = stageonetest.WithSchema
	tsMillis    = stageonetest.TSMillis
	tsSecs      = stageonetest.TSSecs
	tsRFC3339   = stageonetest.TSRFC3339
	tsKafka     = stageonetest.TSKafka
	tsNested    = stageonetest.TSNested
	good        = stageonetest.Good
)

type fataler = stageonetest.Fataler

var (
	topo            = stageonetest.Topo
	recordTime      = stageonetest.RecordTime
	topics          = stageonetest.Topics
	header          = stageonetest.Header
	checkOutputs    = stageonetest.CheckOutputs
	checkEnvelope   = stageonetest.CheckEnvelope
	fuzzSeeds       = stageonetest.FuzzSeeds
	loop            = stageonetest.Loop
	exampleTopology = stageonetest.ExampleTopology
)

// checkConserved is stageonetest.CheckConserved with this package's
// RecordSize.
func checkConserved(t fataler, top *plan.Plan, r *kgo.Record, outs []*kgo.Record, tally *metrics.Tally) {
	t.Helper()
	stageonetest.CheckConserved(t, top, r, outs, tally, RecordSize)
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
