package sideroute

import (
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestAssemblyTargets: an assembly route's incomplete and duplicate topics
// are addressable as NAME.incomplete and NAME.duplicate, and their headers
// decode to a reason a person can read.
func TestAssemblyTargets(t *testing.T) {
	src, err := os.ReadFile("../../examples/assemble-orders.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load("../../examples/assemble-orders.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, "../../examples")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"assembled.incomplete": "orders.incomplete", "assembled.duplicate": "orders.duplicate"} {
		tg, err := Resolve(top, name)
		if err != nil {
			t.Fatalf("resolve %s: %v", name, err)
		}
		if tg.Topic != want || tg.Assembly != "assembled" {
			t.Errorf("%s: %+v, want topic %s of assembly assembled", name, tg, want)
		}
	}
	if _, err := Resolve(top, "nope"); err == nil || !strings.Contains(err.Error(), "assembled.incomplete (orders.incomplete)") {
		t.Errorf("unknown route error does not list the incomplete route: %v", err)
	}

	inc := wire.Decode([]kgo.RecordHeader{
		{Key: wire.HeaderAssemblyRoute, Value: []byte("assembled")},
		{Key: wire.HeaderAssemblyParts, Value: []byte("lines")},
		{Key: wire.HeaderMissing, Value: []byte("customer")},
	})
	if inc.Code() != "incomplete" || !strings.Contains(strings.Join(inc.Lines(), "\n"), "timed out missing customer; held lines") {
		t.Errorf("incomplete record: code %q, lines %q", inc.Code(), inc.Lines())
	}
	dup := wire.Decode([]kgo.RecordHeader{
		{Key: wire.HeaderAssemblyRoute, Value: []byte("assembled")},
		{Key: wire.HeaderDuplicateOf, Value: []byte("o-7")},
	})
	if dup.Code() != "duplicate" || !strings.Contains(strings.Join(dup.Lines(), "\n"), "a part of o-7") {
		t.Errorf("duplicate record: code %q, lines %q", dup.Code(), dup.Lines())
	}
}

// TestOverflowTargets: a limited route with on_overflow: route has its
// overflow topic addressable as NAME.overflow; evict has none; the
// overflow headers decode to a reason a person can read.
func TestOverflowTargets(t *testing.T) {
	src := `application_id: app
inputs: [{topic: in}]
routing: {default: drop}
routes:
  - name: per_user
    topic: per-user
    window:
      type: tumbling
      size: 1m
      late_topic: per-user.late
      aggregates: [{name: n, fn: count}]
      limits: {max_entries: 10, overflow_topic: per-user.overflow}
  - name: evicting
    topic: evicting
    window:
      type: tumbling
      size: 1m
      late_topic: evicting.late
      aggregates: [{name: n, fn: count}]
      limits: {max_entries: 10, on_overflow: evict}
dirty: {topic: in.dirty}
`
	cfg, err := config.Load("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	top, err := plan.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := Resolve(top, "per_user.overflow")
	if err != nil || tg.Topic != "per-user.overflow" || tg.Kind != KindOverflow || tg.Route != "per_user" {
		t.Fatalf("per_user.overflow: %+v, %v", tg, err)
	}
	if _, err := Resolve(top, "evicting.overflow"); err == nil {
		t.Fatal("an evicting route has no overflow route")
	}
	rs := wire.Decode([]kgo.RecordHeader{
		{Key: wire.HeaderOverflowRoute, Value: []byte("per_user")},
		{Key: wire.HeaderOverflowLimit, Value: []byte("max_entries")},
		{Key: wire.HeaderOverflowMax, Value: []byte("10")},
		{Key: wire.HeaderOverflowSize, Value: []byte("10")},
	})
	if rs.Code() != "overflow" || !strings.Contains(strings.Join(rs.Lines(), "\n"), "overflow: route per_user's task was full (max_entries 10, at 10)") {
		t.Errorf("overflow record: code %q, lines %q", rs.Code(), rs.Lines())
	}
}
