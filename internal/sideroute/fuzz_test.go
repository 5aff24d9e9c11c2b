package sideroute

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// FuzzPlan: any side record (value, key, one header) gets a decision
// without a panic; a redriven record keeps its key, carries exactly the
// five redrive marks and none of the side record's sidestream.* headers,
// and a value the transform passes through raw is byte for byte the same.
func FuzzPlan(f *testing.F) {
	top, err := plan.Open("../../examples/logs-by-level.yaml")
	if err != nil {
		f.Fatal(err)
	}
	filter, err := config.CompileExpr(`_reason != "too_large" && (level == nil || level != "DROP")`, true)
	if err != nil {
		f.Fatal(err)
	}
	transform, err := config.CompileExpr(`type(_value) == "map" ? _value : _raw`, false)
	if err != nil {
		f.Fatal(err)
	}
	rd := Redrive{Topology: top, From: Target{Name: "dirty", Topic: "logs.dirty"}, To: "logs", Filter: filter, Transform: transform, MaxRedrives: 3, RunID: "fuzz"}
	for _, s := range [][3]string{
		{`{"level":"TRACE","ts":1}`, wire.HeaderReason, "schema_violation"},
		{"\xff\xfe", wire.HeaderRedriveCount, "2"},
		{`[1,2]`, wire.HeaderTruncated, "9"},
		{`{"level":"DROP"}`, "user", "x"},
		{``, wire.HeaderRedriveCount, "x"},
		{`{"a":{"b":[1e400]}}`, wire.HeaderTimestamp, "-5"},
	} {
		f.Add([]byte(s[0]), []byte("k"), s[1], []byte(s[2]))
	}
	f.Fuzz(func(t *testing.T, value, key []byte, hk string, hv []byte) {
		r := &kgo.Record{Topic: "logs.dirty", Partition: 1, Offset: 9, Key: key, Value: value, Headers: []kgo.RecordHeader{{Key: hk, Value: hv}}}
		out, outcome, _ := rd.plan(r, newLedger(), 1)
		out2, outcome2, _ := rd.plan(r, newLedger(), 1)
		if outcome != outcome2 || (out == nil) != (out2 == nil) || (out != nil && !bytes.Equal(out.Value, out2.Value)) {
			t.Fatalf("not deterministic: %s vs %s", outcome, outcome2)
		}
		if (out != nil) != (outcome == OutcomeRedriven) {
			t.Fatalf("outcome %s with record %v", outcome, out)
		}
		if out == nil {
			return
		}
		if !bytes.Equal(out.Key, key) || out.Topic != "logs" {
			t.Fatalf("key or topic changed: %q %s", out.Key, out.Topic)
		}
		marks := 0
		for _, h := range out.Headers {
			switch h.Key {
			case wire.HeaderRedriveOrigin, wire.HeaderRedriveRun, wire.HeaderRedriveReason, wire.HeaderRedriveCount, wire.HeaderRedriveAt:
				marks++
			default:
				if strings.HasPrefix(h.Key, wire.HeaderPrefix) {
					t.Fatalf("side header %q went through", h.Key)
				}
			}
		}
		if marks != 5 {
			t.Fatalf("%d redrive marks, want 5", marks)
		}
		if out.Value == nil && value != nil && len(value) > 0 {
			t.Fatalf("value lost")
		}
		if tv := bytes.TrimLeft(value, " \t\r\n"); len(tv) > 0 && tv[0] != '{' && !bytes.Equal(out.Value, value) {
			t.Fatalf("raw value changed: %q -> %q", value, out.Value)
		}
	})
}
