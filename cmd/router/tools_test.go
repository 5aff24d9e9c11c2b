package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/sideroute"
	"github.com/sidestream/sidestream/internal/wire"
)

const example = "../../examples/logs-by-level.yaml"

func TestToolsBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tail", "--config", example}, "a route is required; this topology has: error (logs.error), warn (logs.warn), main (logs.main), dirty (logs.dirty)"},
		{[]string{"tail", "--config", example, "--route", "errors"}, `unknown route "errors"; this topology has: error (logs.error)`},
		{[]string{"tail", "--config", example, "--route", "dirty", "--format", "xml"}, `--format must be one of "table","json" but got "xml"`},
		{[]string{"tail", "--config", example, "--route", "dirty", "--lines", "0"}, "--lines must be at least 1 (0 with --follow: only new records)"},
		{[]string{"tail", "--config", example, "--route", "dirty", "extra"}, `two topology files, FILE "extra" and --config "` + example + `": give one`},
		{[]string{"tail", "--route", "dirty"}, "no topology file: name it (router tail FILE), or give --config FILE or SIDESTREAM_CONFIG"},
		{[]string{"redrive", "--config", example, "--to", "logs"}, "--from is required"},
		{[]string{"redrive", "--config", example, "--from", "dirty"}, "--to is required"},
		{[]string{"redrive", "--config", example, "--from", "late", "--to", "logs"}, `unknown route "late"`},
		{[]string{"redrive", "--config", example, "--from", "dirty", "--to", "logs", "--filter", "level =="}, "--filter: the expression ends too early"},
		{[]string{"redrive", "--config", example, "--from", "dirty", "--to", "logs", "--filter", `"x"`}, "--filter: a predicate must be true or false, but this expression yields a string"},
		{[]string{"redrive", "--config", example, "--from", "dirty", "--to", "logs", "--transform", "a +"}, "--transform:"},
		{[]string{"redrive", "--config", example, "--from", "dirty", "--to", "logs", "--limit=-1"}, "--limit must not be negative"},
		{[]string{"redrive", "--config", "../../examples/late-orders.yaml", "--brokers", "127.0.0.1:1", "--from", "lat", "--to", "orders"}, "revenue.late (orders.late)"},
		{[]string{"reset", "--config", example, "--to", "yesterday"}, `--to "yesterday": use earliest, latest or an RFC 3339 time`},
		{[]string{"reset", "--config", example, "--format", "xml"}, `--format must be one of "table","json" but got "xml"`},
		{[]string{"reset", "--config", example, "extra"}, `two topology files, FILE "extra" and --config`},
		{[]string{"reset", "--config", example, "--timeout", "0s"}, "--timeout must be positive"},
	} {
		code, _, errs := run(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestTailShowsRecordsSafely writes dirty-looking records (JSON, binary,
// text with control characters) and reads them back with router tail.
func TestTailShowsRecordsSafely(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "logs", "logs.dirty"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := strings.Join(c.ListenAddrs(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	hs := func(reason, stage string) []kgo.RecordHeader {
		return []kgo.RecordHeader{
			{Key: "trace-id", Value: []byte("t-1")},
			{Key: wire.HeaderError, Value: []byte("level must be one of DEBUG, INFO")},
			{Key: wire.HeaderReason, Value: []byte(reason)},
			{Key: wire.HeaderStage, Value: []byte(stage)},
			{Key: wire.HeaderTopic, Value: []byte("logs")},
			{Key: wire.HeaderPartition, Value: []byte("4")},
			{Key: wire.HeaderOffset, Value: []byte("99")},
		}
	}
	long := `{"id":"e-2","ts":1790000000000,"level":"TRACE","message":"` + strings.Repeat("x", 5000) + `"}`
	err = cl.ProduceSync(context.Background(),
		&kgo.Record{Topic: "logs.dirty", Key: []byte("e-1"), Value: []byte(`{"id":"e-1","ts":1790000000000,"level":"TRACE"}`), Headers: hs("schema_violation", "schema")},
		&kgo.Record{Topic: "logs.dirty", Key: []byte{0xff, 0x00}, Value: []byte{0xde, 0xad, 0xbe, 0xef}, Headers: hs("invalid_utf8", "decode")},
		&kgo.Record{Topic: "logs.dirty", Key: []byte("e-3"), Value: []byte("not json \x1b[31m red"), Headers: hs("invalid_json", "decode")},
		&kgo.Record{Topic: "logs.dirty", Key: []byte("e-2"), Value: []byte(long), Headers: hs("schema_violation", "schema")},
	).FirstErr()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "tail", "--config", example, "--brokers", brokers, "--route", "dirty", "--from-beginning", "--max-value", "100")
	if code != 0 {
		t.Fatalf("tail: exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"logs.dirty[0]@0  key=e-1  event_time=2026-09-21T",
		"reason: schema_violation (stage schema): level must be one of DEBUG, INFO",
		"source: logs[4]@99",
		"header trace-id=t-1",
		"value (json, 47 bytes):\n    {\n      \"id\": \"e-1\",",
		"key=0xff00",
		"value (binary, 4 bytes):\n    deadbeef",
		`not json \x1b[31m red`,
		"first 100 shown",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tail output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") || strings.Count(out, "x") > 200 {
		t.Errorf("tail printed a raw escape or an untruncated value")
	}
	code, out, errs = run(t, "tail", "--config", example, "--brokers", brokers, "--route", "dirty", "--format", "json", "--lines", "1")
	if code != 0 {
		t.Fatalf("tail json: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("--lines 1 printed %d records", len(lines))
	}
	var rec sideroute.Record
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Offset != 3 || rec.Reason != "schema_violation" || rec.ValueBytes != len(long) || !rec.ValueTruncated || rec.ValueKind != "text" || rec.Headers["trace-id"] != "t-1" {
		t.Fatalf("json record: %+v", rec)
	}
	// A JSON value is written as a JSON value, compact, not as a string.
	code, out, errs = run(t, "tail", "--config", example, "--brokers", brokers, "--route", "dirty", "--format", "json", "--from-beginning")
	if code != 0 {
		t.Fatalf("tail json: exit %d: %s", code, errs)
	}
	first := strings.SplitN(out, "\n", 2)[0]
	if !strings.Contains(first, `"value":{"id":"e-1","ts":1790000000000,"level":"TRACE"},"value_kind":"json","value_bytes":47`) {
		t.Errorf("json value not written as JSON: %s", first)
	}
	if !strings.Contains(out, `"value":"deadbeef","value_kind":"binary"`) {
		t.Errorf("binary value: %s", out)
	}
	code, _, errs = run(t, "tail", "--config", example, "--brokers", brokers, "--route", "error")
	if code != 1 || !strings.Contains(errs, "topic logs.error does not exist yet") {
		t.Fatalf("tail of a missing topic: %d %q", code, errs)
	}
	code, _, errs = run(t, "redrive", "--config", example, "--brokers", brokers, "--from", "dirty", "--to", "nope")
	if code != 2 || !strings.Contains(errs, "--to nope: the topic does not exist") {
		t.Fatalf("redrive to a missing topic: %d %q", code, errs)
	}
	code, out, errs = run(t, "redrive", "--config", example, "--brokers", brokers, "--from", "dirty", "--to", "logs", "--dry-run", "--filter", `_reason == "schema_violation"`, "--transform", `fromPairs(concat(toPairs(_value), [["level", "DEBUG"]]))`)
	if code != 0 || !strings.Contains(out, `"would_redrive":2`) || strings.Contains(out, `"redriven"`) || !strings.Contains(out, `"filtered_out":2`) || !strings.Contains(out, `"level": "DEBUG"`) || !strings.Contains(out, "would send logs.dirty/0/0:\nto logs  key=e-1") {
		t.Fatalf("redrive --dry-run: %d\n%s\n%s", code, out, errs)
	}
}

// syncBuffer is a bytes.Buffer safe to read while the demo writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
