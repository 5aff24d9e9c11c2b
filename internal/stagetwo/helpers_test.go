package stagetwo

import (
	"time"

	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
)

// Stage one's shared test helpers (stageonetest), by the names the tests
// of stage two use (as in the runtime's tests).
const (
	tsMillis = stageonetest.TSMillis
)

type fataler = stageonetest.Fataler

var (
	topo          = stageonetest.Topo
	recordTime    = stageonetest.RecordTime
	header        = stageonetest.Header
	checkOutputs  = stageonetest.CheckOutputs
	checkEnvelope = stageonetest.CheckEnvelope
	fuzzSeeds     = stageonetest.FuzzSeeds
	loop          = stageonetest.Loop
	exampleAt     = stageonetest.ExampleAt
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// checkConserved is stageonetest.CheckConserved with stage one's
// RecordSize.
func checkConserved(t fataler, top *plan.Plan, r *kgo.Record, outs []*kgo.Record, tally *metrics.Tally) {
	t.Helper()
	stageonetest.CheckConserved(t, top, r, outs, tally, stageone.RecordSize)
}

func newEngine(t *plan.Plan) *recordRunner {
	return &recordRunner{Engine: stageone.New(t), now: time.Now}
}
