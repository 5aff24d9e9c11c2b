package demo

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
			code, out, errs := run(t, Options{Config: "../../examples/" + c + ".yaml", Records: 2000, Quiet: true})
			if code != 0 {
				t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
			}
			var res Result
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
			// --records counts input records, as for the other demos:
			// whole orders, so at least 2000 and less than one order more.
			if res.Produced < 2000 || res.Produced >= 2000+16 {
				t.Errorf("--records 2000 produced %d input records", res.Produced)
			}
		})
	}
}

// TestDemoAssemblyRate: --rate paces the parts generator too, in input
// records per second: the demo's own throughput cannot exceed it.
func TestDemoAssemblyRate(t *testing.T) {
	code, out, errs := run(t, Options{Config: "../../examples/assemble-orders.yaml", Records: 400, Rate: 100, Quiet: true})
	if code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", code, out, errs)
	}
	var res Result
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
		t.Fatalf("demo output: %v\n%s", err, out)
	}
	if res.RecordsPerS > 105 || res.Produced < 400 {
		t.Errorf("--records 400 --rate 100: %d records at %.0f/s", res.Produced, res.RecordsPerS)
	}
}
