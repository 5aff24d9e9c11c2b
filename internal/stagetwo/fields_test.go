package stagetwo

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestWindowStageTwoBadFields: a repartitioned record whose fields header
// does not decode goes to dirty with bad_repartition_fields, counted
// once, its value and headers kept; a record without the header is
// decoded from its JSON value as before; both go on to the next record.
func TestWindowStageTwoBadFields(t *testing.T) {
	top := w2Topology(t, []config.Aggregate{{Name: "latency", Fn: "sum", Of: "latency_ms"}})
	e := newEngine(top)
	_, reps := stageTwoInputs(t, e, top)
	task := benchWindowTask(t, top)
	corrupt := func(r *kgo.Record, v []byte) *kgo.Record {
		return withEnvelope(t, r, func(env *wire.Envelope) { env.Fields = v })
	}
	// As written before the envelope: the fields header's value.
	corruptOld := func(r *kgo.Record, v []byte) *kgo.Record {
		c := *r
		c.Headers = nil
		for _, h := range wire.ExpandRepartition(r.Headers) {
			if h.Key == wire.HeaderFields {
				h.Value = v
			}
			c.Headers = append(c.Headers, h)
		}
		return &c
	}
	for name, v := range map[string][]byte{"truncated": {1, 1, 10}, "empty": {}, "unknown tag": {1, 1, 1, 'x', 0x99}} {
		for _, old := range []bool{false, true} {
			tally := metrics.NewTally()
			r := corrupt(reps[0], v)
			if old {
				r = corruptOld(reps[0], v)
			}
			outs, err := e.processRepartitioned(r, task, tally)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(outs) != 1 || outs[0].Topic != top.Dirty.Topic || string(outs[0].Value) != string(r.Value) ||
				wire.String(outs[0].Headers, wire.HeaderReason) != wire.ReasonBadFields || wire.String(outs[0].Headers, wire.HeaderStage) != wire.StageWindow {
				t.Fatalf("%s (old %v): outputs %v, want one dirty record (%s/%s) with the value", name, old, outs, wire.StageWindow, wire.ReasonBadFields)
			}
			// Either way the dirty record carries the seven headers.
			want := wire.ExpandRepartition(r.Headers)
			if got := outs[0].Headers[:min(len(want), len(outs[0].Headers))]; !reflect.DeepEqual(got, want) {
				t.Fatalf("%s (old %v): dirty headers %q, want %q", name, old, got, want)
			}
			if tally.Dirty[[2]string{wire.StageWindow, wire.ReasonBadFields}] != 1 || tally.Repartitioned[r.Topic] != 1 {
				t.Fatalf("%s (old %v): tally %+v", name, old, tally)
			}
		}
	}
	tally := metrics.NewTally()
	for _, r := range append(withoutFields(t, reps[:10]), reps[10:20]...) {
		if _, err := e.processRepartitioned(r, task, tally); err != nil {
			t.Fatal(err)
		}
	}
	if tally.Aggregated[top.Routes[3].Name] != 20 || len(tally.Dirty) != 0 {
		t.Fatalf("tally %+v: want 20 aggregated (10 decoded from JSON, 10 from the header)", tally)
	}
}

// TestWindowStageTwoLateHeaders: a late record carries the headers stage
// one wrote before the repartition envelope (the seven, in place), then
// the late headers: what reaches the late route is unchanged.
func TestWindowStageTwoLateHeaders(t *testing.T) {
	top := w2Topology(t, nil)
	e := newEngine(top)
	_, reps := stageTwoInputs(t, e, top)
	task := benchWindowTask(t, top)
	tally := metrics.NewTally()
	late := 0
	// Twice over: the second pass is late.
	for _, r := range append(slices.Clone(reps), reps...) {
		outs, err := e.processRepartitioned(r, task, tally)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			if o.Topic != top.Routes[3].Window.Spec.LateTopic {
				continue
			}
			late++
			want := wire.ExpandRepartition(r.Headers)
			if len(want) != len(r.Headers)+5 || len(o.Headers) != len(want)+4 {
				t.Fatalf("late headers %q of %q", o.Headers, r.Headers)
			}
			if !reflect.DeepEqual(o.Headers[:len(want)], want) || wire.String(o.Headers, wire.HeaderLateRoute) != top.Routes[3].Name {
				t.Fatalf("late headers %q, want %q then the late headers", o.Headers, want)
			}
		}
	}
	if late == 0 {
		t.Fatal("no late record")
	}
}

// TestWindowStageTwoBadEnvelope: a repartitioned record whose envelope
// does not decode (a newer version's, truncated) goes to dirty with
// bad_event_time and the decode error, its headers written out as they
// came; the next record is read as before.
func TestWindowStageTwoBadEnvelope(t *testing.T) {
	top := w2Topology(t, nil)
	e := newEngine(top)
	_, reps := stageTwoInputs(t, e, top)
	task := benchWindowTask(t, top)
	for name, v := range map[string][]byte{"version 2": {2, 0, 0}, "truncated": {1, 0, 0x80}, "empty": {}} {
		tally := metrics.NewTally()
		r := *reps[0]
		r.Headers = slices.Clone(r.Headers)
		j, _ := envelopeOf(t, &r)
		r.Headers[j].Value = v
		outs, err := e.processRepartitioned(&r, task, tally)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(outs) != 1 || outs[0].Topic != top.Dirty.Topic || wire.String(outs[0].Headers, wire.HeaderReason) != wire.ReasonBadTime ||
			!strings.Contains(wire.String(outs[0].Headers, wire.HeaderError), "repartition envelope") {
			t.Fatalf("%s: outputs %v, want one dirty record (%s)", name, outs, wire.ReasonBadTime)
		}
		if !reflect.DeepEqual(outs[0].Headers[:len(r.Headers)], r.Headers) {
			t.Fatalf("%s: dirty headers %q, want %q first", name, outs[0].Headers, r.Headers)
		}
		if outs, err := e.processRepartitioned(reps[1], task, tally); err != nil || tally.Aggregated[top.Routes[3].Name]+tally.Late[top.Routes[3].Name] != 1 || len(tally.Dirty) != 1 {
			t.Fatalf("%s: the next record: %v, %v, tally %+v", name, outs, err, tally)
		}
	}
}

// TestWindowStageTwoLateTooLarge: a record that fits max_record_bytes on
// the repartition topic (its envelope) but not on the late route (its
// headers written out again, the late headers added) goes to dirty with
// too_large, counted dirty and not late: nothing the broker would refuse
// is written.
func TestWindowStageTwoLateTooLarge(t *testing.T) {
	top := w2Topology(t, nil)
	_, reps := stageTwoInputs(t, newEngine(top), top)
	// A record of a few KiB, as near the bound as a real one gets: its
	// dirty record (value cut to dirty.truncate_to, the dirty headers)
	// fits where the late one (the whole value, eleven more headers)
	// does not.
	big := *reps[0]
	big.Value = append([]byte(`{"pad":"`+strings.Repeat("x", 4000)+`",`), reps[0].Value[1:]...)
	bound := stageone.RecordSize(&big) + 10
	top.Dirty.MaxRecordBytes = bound
	e := newEngine(top)
	task := benchWindowTask(t, top)
	name := top.Routes[3].Name
	for _, r := range reps {
		if _, err := e.processRepartitioned(r, task, metrics.NewTally()); err != nil {
			t.Fatal(err)
		}
	}
	tally := metrics.NewTally()
	outs, err := e.processRepartitioned(&big, task, tally) // late now
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Topic != top.Dirty.Topic || wire.String(outs[0].Headers, wire.HeaderReason) != wire.ReasonTooLarge ||
		!strings.Contains(wire.String(outs[0].Headers, wire.HeaderError), "the late record is") {
		t.Fatalf("outputs %v, want one dirty record (%s); tally %+v", outs, wire.ReasonTooLarge, tally)
	}
	if tally.Late[name] != 0 || tally.Dirty[[2]string{wire.StageWindow, wire.ReasonTooLarge}] != 1 {
		t.Fatalf("tally %+v: want the record counted dirty (too_large), not late", tally)
	}
	for _, o := range outs {
		if n := stageone.RecordSize(o); n > bound {
			t.Fatalf("wrote a %d-byte record over max_record_bytes %d", n, bound)
		}
	}
}
