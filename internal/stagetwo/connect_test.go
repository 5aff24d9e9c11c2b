package stagetwo

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/window"
	"github.com/sidestream/sidestream/internal/wire"
)

// A window route with connect-json writes one envelope per result, keyed
// by group key and window start, so a late update overwrites its row.
func TestConnectJSONWindowResults(t *testing.T) {
	top := topo(t, tsMillis, `routes:
  - name: counts
    topic: out.counts
    format: connect-json
    window:
      type: tumbling
      size: 1m
      grace: 1m
      group_by: string(region)
      late_topic: out.late
      aggregates:
        - {name: n, fn: count}
        - {name: total, fn: sum, of: amount}
        - {name: last_id, fn: last, of: string(id)}
`)
	rt := top.Route("counts")
	want := []string{"group_key", "window_start", "window_end", "n", "total", "last_id", "revision", "final"}
	var got []string
	for _, f := range rt.Connect.Fields {
		got = append(got, f.Name+":"+f.Type)
	}
	if len(got) != len(want) || !strings.HasPrefix(got[3], "n:int64") || got[4] != "total:double" || got[5] != "last_id:string" {
		t.Fatalf("window connect fields %v", got)
	}
	res := []window.Result{
		{Key: window.OutputKey("eu", 0), Value: []byte(`{"key":"eu","window_start":0,"window_end":60000,"aggregates":{"n":2,"total":30,"last_id":"o-2"},"revision":1,"final":false}`)},
		{Key: window.OutputKey("eu", 60000), Retract: true},
	}
	recs := newEngine(top).windowResults(rt, res, recordTime, metrics.NewTally())
	if len(recs) != 2 {
		t.Fatalf("records %d", len(recs))
	}
	if string(recs[0].Key) != "eu@0" || recs[0].Topic != "out.counts" {
		t.Fatalf("result record %s %s", recs[0].Topic, recs[0].Key)
	}
	checkEnvelope(t, rt.Connect, recs[0].Value)
	if recs[1].Value != nil {
		t.Fatalf("a retraction must stay a tombstone, got %s", recs[1].Value)
	}
	// A result that does not fit goes to dirty, with its reason.
	bad := []window.Result{{Key: "eu@0", Value: []byte(`{"key":"eu","aggregates":{"last_id":5}}`)}}
	recs = newEngine(top).windowResults(rt, bad, recordTime, metrics.NewTally())
	if len(recs) != 1 || recs[0].Topic != "dirty" || !bytes.Equal(recs[0].Value, bad[0].Value) {
		t.Fatalf("unfit result: %+v", recs)
	}
	if r, _ := header(recs[0], wire.HeaderReason); r != wire.ReasonConnectType {
		t.Fatalf("reason %q", r)
	}
}
