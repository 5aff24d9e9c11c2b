package demo

import (
	"encoding/json"
	"fmt"
	"testing"
)

// The demo runs the table example: the merchants are written before the
// router starts, and exactly the payments of VIP merchants (every fifth
// of m-00 to m-99) reach the priority route.
func TestDemoPaymentsMerchants(t *testing.T) {
	const n = 3000
	code, out, errs := run(t, Options{Config: "../../examples/payments-merchants.yaml", Records: n, Seed: 7, Quiet: true})
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	res := verdictOf(t, out)
	want := 0
	next := payments(7)
	for range n {
		var p struct {
			MerchantID string `json:"merchant_id"`
		}
		if err := json.Unmarshal(next().Value, &p); err != nil {
			t.Fatal(err)
		}
		var i int
		if _, err := fmt.Sscanf(p.MerchantID, "m-%d", &i); err == nil && i < demoMerchants && i%5 == 0 {
			want++
		}
	}
	if !res.Conservation || res.Routes["priority"] != int64(want) || res.Routes["other"] != int64(n-want) {
		t.Fatalf("payments-merchants demo: %+v, want %d priority", res, want)
	}
}
