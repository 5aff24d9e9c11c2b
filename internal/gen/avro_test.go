package gen

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/hamba/avro/v2"
)

// TestAvroLogs: good events decode with the example's schema and carry
// their level; each hostile kind has the shape its reason names.
func TestAvroLogs(t *testing.T) {
	text, err := os.ReadFile("../../examples/schemas/log-event.avsc")
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewAvroLogs(7, string(text), 3)
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(string(text))
	kinds := map[string]int{}
	for i := 0; i < 5000; i++ {
		ev := g.Next()
		kinds[ev.Kind]++
		v := ev.Value
		switch ev.Kind {
		case KindNotFramed:
			if len(v) == 0 || v[0] == 0 {
				t.Fatalf("%s starts with the magic byte: %q", ev.Kind, v)
			}
			continue
		case KindUnknownID:
			if v[0] != 0 || binary.BigEndian.Uint32(v[1:5]) == 3 {
				t.Fatalf("%s frame %x", ev.Kind, v[:5])
			}
			continue
		}
		if !bytes.Equal(v[:5], []byte{0, 0, 0, 0, 3}) {
			t.Fatalf("frame header %x, want schema id 3", v[:5])
		}
		var rec map[string]any
		err := avro.Unmarshal(schema, v[5:], &rec)
		if ev.Kind == KindAvroTruncated {
			if err == nil {
				t.Fatalf("a truncated payload decodes: %v", rec)
			}
			continue
		}
		if err != nil {
			t.Fatalf("event %s: %v", ev.ID, err)
		}
		want := map[string]string{KindInfo: "INFO", KindDebug: "DEBUG", KindWarn: "WARN", KindError: "ERROR"}[ev.Kind]
		if rec["level"] != want || rec["id"] != ev.ID {
			t.Fatalf("event %s of kind %s decodes as %v", ev.ID, ev.Kind, rec)
		}
	}
	for _, k := range []string{KindInfo, KindDebug, KindWarn, KindError, KindNotFramed, KindUnknownID, KindAvroTruncated} {
		if kinds[k] == 0 || RouteOf[k] == "" {
			t.Errorf("kind %s: %d generated, route %q", k, kinds[k], RouteOf[k])
		}
	}
}
