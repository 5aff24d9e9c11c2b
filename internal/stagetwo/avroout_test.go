package stagetwo

import (
	"time"

	"bytes"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/window"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/wire"
)

// A window route with format avro writes each result as Avro behind its
// schema id's header, keyed by group key and window start; a retraction
// stays a tombstone; a result that does not fit the schema goes to dirty
// as avro_encode, counted as a window result of kind dirty.
func TestAvroWindowResults(t *testing.T) {
	top := topo(t, tsMillis, `routes:
  - name: counts
    topic: out.counts
    format: avro
    window:
      type: tumbling
      size: 1m
      group_by: string(region)
      late_topic: out.late
      aggregates:
        - {name: n, fn: count}
        - {name: last_id, fn: last, of: string(id)}
`)
	rt := top.Route("counts")
	e := &recordRunner{Engine: stageone.New(top, stageone.WithSchemaIDs(stageone.NewSchemaIDs(map[string]int{"counts": 41}))), now: time.Now}
	res := []window.Result{
		{Key: window.OutputKey("eu", 0), Value: []byte(`{"key":"eu","window_start":0,"window_end":60000,"aggregates":{"n":2,"last_id":"o-2"},"revision":1,"final":true}`), Final: true},
		{Key: window.OutputKey("eu", 60000), Retract: true},
		{Key: "eu@0", Value: []byte(`{"key":"eu","aggregates":{"last_id":5}}`)},
	}
	tally := metrics.NewTally()
	recs := e.windowResults(rt, res, recordTime, tally)
	if len(recs) != 3 || recs[0].Topic != "out.counts" || string(recs[0].Key) != "eu@0" || recs[1].Value != nil {
		t.Fatalf("records %+v", recs)
	}
	var h sr.ConfluentHeader
	id, payload, err := h.DecodeID(recs[0].Value)
	if err != nil || id != 41 {
		t.Fatalf("header id %d %v", id, err)
	}
	var got map[string]any
	if err := avro.Unmarshal(avro.MustParse(rt.Avro.Schema), payload, &got); err != nil {
		t.Fatal(err)
	}
	if got["group_key"] != "eu" || got["n"] != int64(2) || got["last_id"] != "o-2" || got["final"] != true || got["window_end"] != int64(60000) {
		t.Fatalf("decoded %#v", got)
	}
	if r, _ := header(recs[2], wire.HeaderReason); recs[2].Topic != "dirty" || r != wire.ReasonAvroEncode || !bytes.Equal(recs[2].Value, res[2].Value) {
		t.Fatalf("unfit result on %s with reason %q: %q", recs[2].Topic, r, recs[2].Value)
	}
	if tally.WindowResults[[2]string{"counts", "dirty"}] != 1 || tally.WindowResults[[2]string{"counts", "final"}] != 1 {
		t.Fatalf("window results %v", tally.WindowResults)
	}
}
