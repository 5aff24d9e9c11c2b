package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDemoAssembly runs both assembly examples through `router demo`: the
// verdict checks every generated order is assembled or expired as the
// generator says, and the duplicate route.
func TestDemoAssembly(t *testing.T) {
	for _, c := range []string{"assemble-orders", "order-payment-shipment"} {
		t.Run(c, func(t *testing.T) {
			code, out, errs := run(t, "demo", "--config", "../../examples/"+c+".yaml", "--records", "2000", "--quiet", "--listen", "127.0.0.1:0")
			if code != 0 {
				t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
			}
			var res demoResult
			if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
				t.Fatalf("demo output: %v\n%s", err, out)
			}
			// The event-time example's duplicates are fixed by the input; the
			// processing-time one's shipments land inside the assembly or on
			// the duplicate route depending on arrival (the verdict checks
			// their sum).
			wantDup := c == "assemble-orders"
			if !res.Conservation || res.Assembly["assembled"] == 0 || res.Assembly["incomplete"] == 0 || (wantDup && res.Assembly["duplicate"] == 0) {
				t.Fatalf("%s demo: %+v", c, res)
			}
		})
	}
}
