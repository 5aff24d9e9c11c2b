package demo

import (
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/gen"
)

// TestDemoAvro runs the Avro example through `router demo`: the embedded
// Kafka, the in-process registry, Avro log events with hostile frames.
// Its verdict must hold, and the routes and dirty reasons read back must
// be what the generator's kinds say (computed here from the generator,
// not from the demo's own count).
func TestDemoAvro(t *testing.T) {
	const n = 3000
	t.Setenv("SIDESTREAM_SCHEMA_REGISTRY_URL", "http://registry.invalid:8081")
	code, out, errs := run(t, Options{Config: "../../examples/logs-avro.yaml", Records: 3000, Quiet: true})
	if code != 0 {
		t.Fatalf("demo exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if !strings.Contains(errs, "in-process schema registry at http://127.0.0.1:") || !strings.Contains(errs, "SIDESTREAM_SCHEMA_REGISTRY_URL do not apply") {
		t.Errorf("the demo does not say which registry it uses: %s", errs)
	}
	var res Result
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
		t.Fatalf("demo output: %v\n%s", err, out)
	}
	schema, err := os.ReadFile("../../examples/schemas/log-event.avsc")
	if err != nil {
		t.Fatal(err)
	}
	// The demo's registry is fresh: its one schema has id 1.
	g, err := gen.NewAvroLogs(1, string(schema), 1)
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]int64{"main": 0, "warn": 0, "error": 0}
	reasons := map[string]int64{}
	var dirty int64
	for i := 0; i < n; i++ {
		k := g.Next().Kind
		if r, ok := gen.ReasonOf[k]; ok {
			reasons[r]++
			dirty++
			continue
		}
		routes[gen.RouteOf[k]]++
	}
	if !res.Conservation || res.Produced != n || res.Consumed != n || res.Dirty != dirty {
		t.Fatalf("avro demo: %+v", res)
	}
	if !maps.Equal(res.Routes, routes) || !maps.Equal(res.DirtyReasons, reasons) || len(reasons) != 3 {
		t.Errorf("read back routes %v dirty %v, the generator's kinds say %v and %v", res.Routes, res.DirtyReasons, routes, reasons)
	}
}

// TestDemoRefusesProtobuf: the demo generates JSON and Avro only; a
// protobuf input is refused with a clear message, not run into dirty.
func TestDemoRefusesProtobuf(t *testing.T) {
	src, err := os.ReadFile("../../examples/logs-avro.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := t.TempDir() + "/logs-proto.yaml"
	if err := os.WriteFile(p, []byte(strings.Replace(string(src), "format: avro", "format: protobuf", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, Options{Config: p, Records: 10, Quiet: true})
	if code != 2 || !strings.Contains(errs, `input "logs-avro" has format protobuf`) {
		t.Errorf("demo of a protobuf input: exit %d %q", code, errs)
	}
}
