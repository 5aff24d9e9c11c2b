package runtime

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sidestream/sidestream/internal/gen"
)

// TestAssemblyStateQuery: GET /state/{assembly route}?key=ID shows the
// parts held for an open assembly and the parts still missing, and says
// held=false for an ID nothing arrived for; an ID of a partition this
// instance does not hold is never answered with made-up state.
func TestAssemblyStateQuery(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(6, "order-parts"))
	top := exampleAt(t, "../../examples/assemble-orders.yaml", c.ListenAddrs())
	const ts = 1_790_000_000_000
	var parts []gen.Part
	for i := range 12 { // only the X part of each order: every assembly stays open
		parts = append(parts, gen.Part{Topic: "order-parts", Key: []byte(fmt.Sprintf("o-%d", i)),
			Value: fmt.Appendf(nil, `{"kind":"x","order_id":"o-%d","items":2,"price":1.5,"qty":%d,"ts":%d}`, i, i+1, ts+int64(i))})
	}
	produceParts(t, c.ListenAddrs(), parts)
	a := start(t, top, "a")
	defer a.stop(t)
	h := stateHandler(a.p)
	rep := top.Assemblies()[0].Assembly.RepartitionTopic
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if n := testutil.ToFloat64(a.p.Metrics().Repartitioned.WithLabelValues(rep)); n >= float64(len(parts)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("parts not through stage two: %+v", a.p.Metrics().Snapshot())
		}
	}
	for i := range 12 {
		id := fmt.Sprintf("o-%d", i)
		code, body := getState(t, h, "/state/assembled?key="+id)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %v", id, code, body)
		}
		if body["held"] != true || body["open"] != true || fmt.Sprint(body["missing"]) != "[customer]" {
			t.Fatalf("%s: %v", id, body)
		}
		if i == 0 {
			t.Logf("%s: %v", id, body)
		}
		ps, _ := body["parts"].([]any)
		if len(ps) != 1 {
			t.Fatalf("%s: parts %v", id, body["parts"])
		}
	}
	// A partition no part reached is not loaded: 503, retry later. One
	// that was reached but holds nothing for the ID: held false.
	code, body := getState(t, h, "/state/assembled?key=o-999")
	switch code {
	case http.StatusOK:
		if body["held"] != false {
			t.Fatalf("o-999: %v", body)
		}
	case http.StatusServiceUnavailable:
	default:
		t.Fatalf("o-999: %d %v", code, body)
	}
	if code, _ := getState(t, h, "/state/nope?key=o-1"); code != http.StatusNotFound {
		t.Fatalf("unknown route: %d", code)
	}
}
