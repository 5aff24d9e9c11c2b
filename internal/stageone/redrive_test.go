package stageone

import (
	"testing"

	"github.com/sidestream/sidestream/internal/wire"
)

// TestRedrivenRecordsCountedAndMarked: a record with the redrive mark is
// counted as redriven on its input topic and keeps its marks on the route
// it reaches and on dirty when it fails again; an unmarked one is not
// counted.
func TestRedrivenRecordsCountedAndMarked(t *testing.T) {
	top := topo(t, withSchema, tsMillis)
	marks := []string{wire.HeaderRedriveOrigin, "logs.dirty/2/7", wire.HeaderRedriveCount, "1", wire.HeaderRedriveRun, "r1"}
	for _, tc := range []struct {
		name  string
		value string
		dirty bool
	}{
		{"fixed", `{"id":"e-1","ts":1790000000000,"level":"INFO","service":"s","message":"m"}`, false},
		{"still broken", `{"id":"e-1","ts":1790000000000,"level":"TRACE","service":"s","message":"m"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := process(t, top, input(tc.value, marks...))
			if o.tally.Redriven["in"] != 1 {
				t.Fatalf("redriven tally %v, want in=1", o.tally.Redriven)
			}
			if len(o.outs) != 1 || (o.outs[0].Topic == "dirty") != tc.dirty {
				t.Fatalf("outputs %v", o.outs)
			}
			got := map[string]string{}
			for _, h := range o.outs[0].Headers {
				got[h.Key] = string(h.Value)
			}
			if got[wire.HeaderRedriveOrigin] != "logs.dirty/2/7" || got[wire.HeaderRedriveCount] != "1" || got[wire.HeaderRedriveRun] != "r1" {
				t.Fatalf("marks not kept on %s: %v", o.outs[0].Topic, got)
			}
		})
	}
	o := process(t, top, input(`{"id":"e-1","ts":1790000000000,"level":"INFO","service":"s","message":"m"}`))
	if len(o.tally.Redriven) != 0 {
		t.Fatalf("an unmarked record counted as redriven: %v", o.tally.Redriven)
	}
}
