package topotest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// avroTestFile writes a test file (src after its topology: line) for a
// copy of examples/logs-avro.yaml with routes appended (extra: then
// routing.match is all), the
// example's schema named for its input.
func avroTestFile(t *testing.T, extra, src string) string {
	t.Helper()
	dir := t.TempDir()
	top, err := os.ReadFile("../../examples/logs-avro.yaml")
	if err != nil {
		t.Fatal(err)
	}
	topo := strings.Replace(string(top), "\ndirty:", extra+"\ndirty:", 1)
	if extra != "" {
		topo = strings.Replace(topo, "match: first", "match: all", 1)
	}
	schema, err := filepath.Abs("../../examples/schemas/log-event.avsc")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "t.test.yaml")
	if err := os.WriteFile(f, []byte("topology: t.yaml\nschemas: {logs-avro: "+schema+"}\n"+src), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTopologyTestAvroRoute: a case on an Avro input with an avro route
// (format: avro, its schema registered by the router under
// <topic>-value) passes, the route's values decoded with that schema;
// a wrong expectation fails with the decoded values in the diff.
func TestTopologyTestAvroRoute(t *testing.T) {
	const route = `
  - name: slow
    topic: logs-avro.slow
    when: latency_ms > 100
    format: avro
    project:
      id: string(id)
      ms: int(latency_ms)`
	f := avroTestFile(t, route, `tests:
  - name: passes
    input:
      - value: {id: e-1, ts: 1790000000000, level: WARN, service: s, host: h, message: m, user_id: 1, latency_ms: 250.5, region: r}
    expect:
      warn:
        - value: {id: e-1, ts: 1790000000000, level: WARN, service: s, host: h, message: m, user_id: 1, latency_ms: 250.5, trace_id: null, region: r}
      slow:
        - value: {id: e-1, ms: 250}
  - name: fails
    input:
      - value: {id: e-2, ts: 1790000000000, level: INFO, service: s, host: h, message: m, user_id: 2, latency_ms: 101, region: r}
    expect:
      main:
        - value: {id: e-2, ts: 1790000000000, level: INFO, service: s, host: h, message: other, user_id: 2, latency_ms: 101, trace_id: null, region: r}
      slow:
        - value: {id: e-2, ms: 100}
`)
	code, out, errs := run(t, f)
	if code != 1 || !strings.Contains(errs, "1 of 2 cases failed") || !strings.Contains(out, "ok   "+f+": passes") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
	}
	for _, want := range []string{
		"FAIL " + f + ": fails",
		`route main (logs-avro.main): 1 records`,
		`- want value={"host":"h","id":"e-2","latency_ms":101,"level":"INFO","message":"other",`,
		`+ got  value={"host":"h","id":"e-2","latency_ms":101,"level":"INFO","message":"m","region":"r","service":"s","trace_id":null,"ts":1790000000000,"user_id":2}`,
		`route slow (logs-avro.slow): 1 records`,
		`- want value={"id":"e-2","ms":100}`,
		`+ got  value={"id":"e-2","ms":101}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
}

// TestTopologyTestAvroBadInput: a case value that does not fit the
// input's Avro schema fails its case with the case name, the line and the
// field, and nothing runs; so do a registry-backed input without a schema
// and raw values given twice.
func TestTopologyTestAvroBadInput(t *testing.T) {
	for _, tc := range []struct{ name, input, want string }{
		{"enum", `{id: e-1, ts: 1, level: TRACE, service: s, host: h, message: m, user_id: 1, latency_ms: 1, region: r}`,
			`t.test.yaml:6:9: input[0]: value: the value does not fit the Avro schema log-event.avsc (record sidestream.examples.LogEvent): level: "TRACE" is not a symbol of enum sidestream.examples.Level (DEBUG, INFO, WARN, ERROR)`},
		{"missing", `{id: e-1, ts: 1, level: INFO, service: s, host: h, message: m, latency_ms: 1, region: r}`,
			`field user_id of record sidestream.examples.LogEvent is missing (it has no default)`},
		{"unknown field", `{id: e-1, ts: 1, level: INFO, service: s, host: h, message: m, user_id: 1, latency_ms: 1, region: r, colour: red}`,
			`record sidestream.examples.LogEvent has no field colour`},
		{"type", `{id: e-1, ts: 1, level: INFO, service: s, host: h, message: m, user_id: 1.5, latency_ms: 1, region: r}`,
			`user_id: 1.5 is not a long`},
		{"union", `{id: e-1, ts: 1, level: INFO, service: s, host: h, message: m, user_id: 1, latency_ms: 1, region: r, trace_id: 7}`,
			`trace_id: 7 fits no branch of the union [null, string]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := avroTestFile(t, "", "tests:\n  - name: bad "+tc.name+"\n    input:\n      - value: "+tc.input+"\n    expect: {}\n")
			code, out, errs := run(t, f)
			if code != 1 || !strings.Contains(out, "FAIL "+f+": bad "+tc.name) || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, stderr %q\nwant %q in\n%s", code, errs, tc.want, out)
			}
		})
	}
	f := avroTestFile(t, "", "tests:\n  - name: twice\n    input:\n      - {value: x, value_base64: AA==}\n")
	if code, out, _ := run(t, f); code != 1 || !strings.Contains(out, "give one of value, value_file and value_base64") {
		t.Errorf("two values: exit %d\n%s", code, out)
	}
	noSchema := filepath.Join(filepath.Dir(f), "none.test.yaml")
	if err := os.WriteFile(noSchema, []byte("topology: t.yaml\ntests:\n  - name: n\n    input: [{value: x}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, noSchema); code != 1 || !strings.Contains(out, noSchema+":1:1: input logs-avro has format avro: name its writer schema in the test file (schemas: {logs-avro: FILE}") {
		t.Errorf("no schema: exit %d\n%s", code, out)
	}
}

// TestTopologyTestJSONSchema: a json_schema input's object values are
// framed with the registered id as they are (not validated: the router
// sends what its schema refuses to dirty), and read back as JSON.
func TestTopologyTestJSONSchema(t *testing.T) {
	dir := t.TempDir()
	top, err := os.ReadFile("../../examples/logs-by-level.yaml")
	if err != nil {
		t.Fatal(err)
	}
	topo := strings.Replace(string(top), "\ninputs:\n  - topic: logs\n    format: json\n    schema: schemas/log-event.json\n",
		"\nschema_registry: {url: http://registry.invalid:8081}\ninputs:\n  - topic: logs\n    format: json_schema\n", 1)
	if !strings.Contains(topo, "format: json_schema") {
		t.Fatalf("the topology was not rewritten:\n%s", topo)
	}
	schema, err := filepath.Abs("../../examples/schemas/log-event.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(topo), 0o644); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "t.test.yaml")
	src := "topology: t.yaml\nschemas: {logs: " + schema + `}
tests:
  - name: framed JSON
    input:
      - value: {id: e-1, ts: 1790000000000, level: WARN, service: s, message: m}
      - value: {id: e-2, ts: 1790000000000, level: TRACE, service: s, message: m}
      - value: '{"id":"e-3"}'
    expect:
      warn:
        - value: {id: e-1, ts: 1790000000000, level: WARN, service: s, message: m}
      dirty:
        - {reason: json_schema_invalid}
        - {reason: not_registry_framed, value: '{"id":"e-3"}'}
`
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, f); code != 0 || !strings.Contains(out, "ok   "+f+": framed JSON") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
	}
}
