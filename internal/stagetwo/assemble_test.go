package stagetwo

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestAssemblyTooLarge: an assembled record over max_record_bytes goes to
// the dirty route, cut to fit, instead of failing the transaction.
func TestAssemblyTooLarge(t *testing.T) {
	top := exampleAt(t, "../../examples/order-payment-shipment.yaml", []string{"127.0.0.1:9092"})
	top.Dirty.MaxRecordBytes, top.Dirty.TruncateTo = 2048, 512
	e := newEngine(top)
	as, err := newAssemblyStage(top)
	if err != nil {
		t.Fatal(err)
	}
	ar := as.routes[top.Assemblies()[0].Assembly.RepartitionTopic]
	st := changelog.NewMemory()
	op, err := assembly.New(ar.spec, st)
	if err != nil {
		t.Fatal(err)
	}
	task := &assemblyTask{route: ar, st: st, op: op}
	big := strings.Repeat("x", 1200)
	tally := metrics.NewTally()
	var last []*kgo.Record
	for _, v := range []string{
		`{"id":"o-1","customer":"` + big + `","amount":1}`,
	} {
		for _, part := range e.Process(&kgo.Record{Topic: "orders", Value: []byte(v)}, tally) {
			if last, err = e.processAssembly(part, task, time.Now(), tally); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, part := range e.Process(&kgo.Record{Topic: "payments", Value: []byte(`{"order_ref":"o-1","status":"captured","method":"` + big + `","amount":1}`)}, tally) {
		if last, err = e.processAssembly(part, task, time.Now(), tally); err != nil {
			t.Fatal(err)
		}
	}
	if len(last) != 1 || last[0].Topic != top.Dirty.Topic || wire.String(last[0].Headers, wire.HeaderReason) != wire.ReasonTooLarge {
		t.Fatalf("want one dirty too_large record, got %+v", last)
	}
	if stageone.RecordSize(last[0]) > top.Dirty.MaxRecordBytes {
		t.Fatalf("the dirty record is %d bytes, over %d", stageone.RecordSize(last[0]), top.Dirty.MaxRecordBytes)
	}
	if tally.Assemblies[[2]string{"order-view", metrics.ResultTooLarge}] != 1 || len(tally.Dirty) != 0 {
		t.Fatalf("counted as %+v / dirty %+v", tally.Assemblies, tally.Dirty)
	}
}
