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
	code, out, errs := run(t, "demo", "--config", "../../examples/assemble-orders.yaml", "--records", "400", "--rate", "100", "--quiet", "--listen", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("demo exit %d\n%s\n%s", code, out, errs)
	}
	var res demoResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
		t.Fatalf("demo output: %v\n%s", err, out)
	}
	if res.RecordsPerS > 105 || res.Produced < 400 {
		t.Errorf("--records 400 --rate 100: %d records at %.0f/s", res.Produced, res.RecordsPerS)
	}
}

func TestDemoRefusesBrokers(t *testing.T) {
	code, _, errs := run(t, "demo", "--brokers", "kafka:9092", "--records", "10")
	if code != 2 || !strings.Contains(errs, "--brokers: the demo runs its own embedded Kafka") {
		t.Errorf("demo --brokers: exit %d %q", code, errs)
	}
}
