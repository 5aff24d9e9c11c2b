package stageone

import (
	"testing"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/wire"
)

// A record whose lookup an as_of table answered too old (on_too_old:
// oldest) carries wire.HeaderLookupTooOld, naming the table, on every
// output, the ones of routes that read no table included; a record
// answered exactly carries none, also when it comes right after a too
// old one (the marks are the record's own), and whatever mark the input
// carried is not passed on.
func TestLookupTooOldHeader(t *testing.T) {
	top := topo(t, "routing: {default: drop, match: all}\n",
		"routes:\n  - {name: vip, topic: vip, when: 'lookup(\"merchants\", m)?.tier == \"vip\"'}\n  - {name: all, topic: out}\n",
		"tables: [{name: merchants, topic: merchants, mode: as_of, history: 1h}]\n")
	top.BindTables(func(table string, key any, at int64) (any, bool, error) {
		return map[string]any{"tier": "vip"}, key == "old", nil
	})
	e := New(top)
	for _, c := range []struct{ merchant, want string }{
		{"old", "merchants"},
		{"new", ""},
		{"old", "merchants"},
		{"new", ""},
	} {
		// An input's own mark (an upstream router's) is replaced.
		outs := e.Process(input(`{"m":"`+c.merchant+`"}`, wire.HeaderLookupTooOld, "upstream"), metrics.NewTally())
		if len(outs) != 2 {
			t.Fatalf("%s: %d outputs, want vip and out", c.merchant, len(outs))
		}
		for _, r := range outs {
			got, ok := header(r, wire.HeaderLookupTooOld)
			if got != c.want || ok != (c.want != "") {
				t.Errorf("%s: %s carries %s=%q (present %v), want %q", c.merchant, r.Topic, wire.HeaderLookupTooOld, got, ok, c.want)
			}
			n := 0
			for _, h := range r.Headers {
				if h.Key == wire.HeaderLookupTooOld {
					n++
				}
			}
			if n > 1 {
				t.Errorf("%s: %s carries the header %d times", c.merchant, r.Topic, n)
			}
		}
	}
}
