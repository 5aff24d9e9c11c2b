package stageone

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// Window routes of every plan: counts only; counts and fields (fast);
// a comparison, which a fast form may leave to the VM (mismatched
// types); metadata and arithmetic (the VM).
var windowValuesSections = []string{
	"routing: {match: all, default: drop}\n",
	"routes:\n" + windowValuesRoute("cnt", "{name: c, fn: count}") +
		windowValuesRoute("fld", "{name: c, fn: count}, {name: s, fn: sum, of: n}, {name: m, fn: max, of: x}, {name: l, fn: last, of: s}") +
		windowValuesRoute("cmp", "{name: g, fn: sum, of: 'n > 3'}, {name: c, fn: count}") +
		windowValuesRoute("vm", "{name: c, fn: count}, {name: p, fn: max, of: _partition}, {name: s, fn: sum, of: 'n + 1'}, {name: d, fn: max, of: meta.depth}"),
}

func windowValuesRoute(name, aggs string) string {
	return "  - name: " + name + "\n    topic: " + name + "\n    window:\n      type: tumbling\n      size: 1m\n      group_by: service\n      late_topic: " +
		name + ".late\n      aggregates: [" + aggs + "]\n"
}

// TestWindowValuesPlans: the plans the routes get (so the property below
// covers each path).
func TestWindowValuesPlans(t *testing.T) {
	top := topo(t, windowValuesSections...)
	e := New(top)
	for name, want := range map[string]bool{"cnt": true, "fld": true, "cmp": true, "vm": false} {
		if got := e.winFields[top.Route(name)].byFast; got != want {
			t.Errorf("route %s: byFast %v, want %v", name, got, want)
		}
	}
}

// TestWindowValuesEqualSlowPathProperty: WindowValues gives what
// RepartitionedFields and AggregateValues give (values, reasons and
// messages) for any repartitioned record: fields headers stage one
// writes, with fields of any value or none, foreign and corrupt ones, a
// header repeated, none (the JSON value decoded), metadata headers
// present or not; one scratch per route across records, let go of
// after each.
func TestWindowValuesEqualSlowPathProperty(t *testing.T) {
	top := topo(t, windowValuesSections...)
	e := New(top)
	scratch := map[string]*WindowScratch{}
	for _, rt := range top.Windows() {
		scratch[rt.Name] = e.NewWindowScratch()
	}
	names := []string{"n", "x", "s", "meta", "level", "zz"}
	rapid.Check(t, func(rt *rapid.T) {
		fields := map[string]any{}
		for _, f := range names {
			if rapid.Bool().Draw(rt, "has "+f) {
				fields[f] = valueGen(2).Draw(rt, f)
			}
		}
		var hs []kgo.RecordHeader
		addFields := func() {
			switch rapid.IntRange(0, 4).Draw(rt, "fields header") {
			case 0, 1: // stage one's: sorted names
				b, err := wire.AppendFields(nil, []string{"level", "meta", "n", "s", "x", "zz"}, fields)
				if err != nil {
					rt.Fatal(err)
				}
				hs = append(hs, kgo.RecordHeader{Key: wire.HeaderFields, Value: b})
			case 2: // names in another order
				b, err := wire.AppendFields(nil, []string{"x", "n", "s", "meta"}, fields)
				if err != nil {
					rt.Fatal(err)
				}
				hs = append(hs, kgo.RecordHeader{Key: wire.HeaderFields, Value: b})
			case 3:
				hs = append(hs, kgo.RecordHeader{Key: wire.HeaderFields, Value: rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(rt, "bytes")})
			}
		}
		addFields()
		if rapid.Bool().Draw(rt, "metadata") {
			hs = append(hs,
				kgo.RecordHeader{Key: wire.HeaderTopic, Value: []byte("in")},
				kgo.RecordHeader{Key: wire.HeaderPartition, Value: []byte(rapid.SampledFrom([]string{"3", "x", ""}).Draw(rt, "partition"))},
				kgo.RecordHeader{Key: wire.HeaderOffset, Value: []byte(strconv.Itoa(rapid.IntRange(-2, 1000).Draw(rt, "offset")))})
		}
		addFields() // a second one: the last is stage one's
		value := []byte(rapid.SampledFrom([]string{"", "not json", `{"n":4,"x":1.5,"s":"a","meta":{"depth":2}}`}).Draw(rt, "value"))
		if rapid.Bool().Draw(rt, "value of the fields") {
			if b, err := json.Marshal(jsonable(fields)); err == nil {
				value = b
			}
		}
		r := &kgo.Record{Topic: "rep", Key: []byte("k"), Value: value, Headers: hs, Timestamp: recordTime}
		h := wire.ReadRepartition(hs)
		h.EventTime = 1_700_000_000_000
		m := &Meta{Key: h.SourceKey, Topic: string(h.Topic), Timestamp: recordTime.UnixMilli(), Offset: h.Offset}
		if h.PartitionOK {
			m.Partition = int32(h.Partition)
		}
		for _, route := range top.Windows() {
			want, wantErr := slowWindowValues(e, route, r, m, h.EventTime)
			got, gotErr := e.WindowValues(route, r, &h, m, scratch[route.Name])
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || (gotErr != nil && (gotErr.Reason != wantErr.Reason || gotErr.Stage != wantErr.Stage)) {
				rt.Fatalf("route %s: error %v, want %v", route.Name, gotErr, wantErr)
			}
			if !sameValues(rt, got, want) {
				rt.Fatalf("route %s: values %#v, want %#v", route.Name, got, want)
			}
			for i, v := range scratch[route.Name].fields {
				if v != nil {
					rt.Fatalf("route %s: the scratch keeps field %s = %#v", route.Name, top.Fields[i], v)
				}
			}
		}
	})
}

func slowWindowValues(e *Engine, rt *plan.RouteNode, r *kgo.Record, m *Meta, et int64) ([]any, *RecordError) {
	d, rerr := e.RepartitionedFields(r)
	if rerr != nil {
		return nil, rerr
	}
	d.EventTime = et
	return e.AggregateValues(rt, m, d)
}

// sameValues compares aggregate values as the fields header encodes
// them (floats bit for bit), else as Go prints them.
func sameValues(t *rapid.T, a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, errX := wire.AppendFields(nil, []string{"v"}, map[string]any{"v": a[i]})
		y, errY := wire.AppendFields(nil, []string{"v"}, map[string]any{"v": b[i]})
		if errX != nil || errY != nil {
			if fmt.Sprintf("%#v", a[i]) != fmt.Sprintf("%#v", b[i]) {
				return false
			}
			continue
		}
		if string(x) != string(y) {
			return false
		}
	}
	return true
}

// TestWindowValuesAllocs: a count-only route reads no field and builds
// no map; a route of fields allocates only what its values box (a
// float, a string; a small integer is not boxed): the slow path makes
// maps.
func TestWindowValuesAllocs(t *testing.T) {
	top := topo(t, windowValuesSections...)
	e := New(top)
	for name, want := range map[string]float64{"cnt": 0, "fld": 2} {
		rt := top.Route(name)
		b, err := wire.AppendFields(nil, e.winFields[rt].names, map[string]any{"n": 7, "x": 2.5, "s": "a"})
		if err != nil {
			t.Fatal(err)
		}
		if name == "cnt" {
			b, _ = wire.AppendFields(nil, nil, nil)
		}
		r := &kgo.Record{Headers: []kgo.RecordHeader{{Key: wire.HeaderFields, Value: b}}}
		h := wire.ReadRepartition(r.Headers)
		m := &Meta{}
		s := e.NewWindowScratch()
		got := testing.AllocsPerRun(100, func() {
			if _, rerr := e.WindowValues(rt, r, &h, m, s); rerr != nil {
				t.Fatal(rerr)
			}
		})
		if got > want {
			t.Errorf("route %s: %v allocations per record, want at most %v", name, got, want)
		}
	}
}

// TestRepartitionHeadersProperty: stage one writes the input's headers
// and one envelope, capped at its end, that expands to the seven headers
// written one by one before the envelope, exactly (nil and empty apart).
// Carved from an evalState's slabs, what an earlier record got stays as
// it was.
func TestRepartitionHeadersProperty(t *testing.T) {
	st := &evalState{}
	var earlier, earlierCopy [][]kgo.RecordHeader
	rapid.Check(t, func(rt *rapid.T) {
		r := &kgo.Record{
			Topic: rapid.StringN(0, 40, -1).Draw(rt, "topic"), Partition: rapid.Int32().Draw(rt, "partition"),
			Offset: rapid.Int64().Draw(rt, "offset"), Key: rapid.SliceOfN(rapid.Byte(), 0, 8).Draw(rt, "key"),
		}
		if rapid.Bool().Draw(rt, "nil key") {
			r.Key = nil
		}
		if rapid.Bool().Draw(rt, "input headers") {
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}}
		}
		et := rapid.Int64().Draw(rt, "event time")
		before := rapid.SampledFrom([]int64{math.MinInt64, math.MaxInt64, -1, 1_700_000_000_000}).Draw(rt, "before")
		aligned := rapid.Bool().Draw(rt, "aligned")
		want := slices.Clone(r.Headers)
		if aligned {
			var b []byte
			if before != math.MinInt64 {
				b = []byte(strconv.FormatInt(before, 10))
			}
			want = append(want, kgo.RecordHeader{Key: wire.HeaderSourceMax, Value: b})
		}
		want = append(want,
			kgo.RecordHeader{Key: wire.HeaderEventTime, Value: []byte(strconv.FormatInt(et, 10))},
			kgo.RecordHeader{Key: wire.HeaderSourceKey, Value: r.Key},
			kgo.RecordHeader{Key: wire.HeaderTopic, Value: []byte(r.Topic)},
			kgo.RecordHeader{Key: wire.HeaderPartition, Value: []byte(strconv.Itoa(int(r.Partition)))},
			kgo.RecordHeader{Key: wire.HeaderOffset, Value: []byte(strconv.FormatInt(r.Offset, 10))})
		var fill func([]byte) ([]byte, error)
		if rapid.Bool().Draw(rt, "fields") {
			fields := rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(rt, "fields bytes")
			fill = func(b []byte) ([]byte, error) { return append(b, fields...), nil }
			want = append(want, kgo.RecordHeader{Key: wire.HeaderFields, Value: fields})
		}
		from := st
		if rapid.Bool().Draw(rt, "own allocation") {
			from = nil
		}
		got, err := (&Engine{}).repartitionHeaders(from, r, et, before, aligned, 4, fill)
		if err != nil {
			rt.Fatal(err)
		}
		// What comes after it appends to its own copy.
		_ = append(got, kgo.RecordHeader{Key: "part", Value: []byte("x")})
		for i, hs := range earlier {
			if !reflect.DeepEqual(hs, earlierCopy[i]) {
				rt.Fatalf("an earlier record's headers changed: %q, were %q", hs, earlierCopy[i])
			}
		}
		c := slices.Clone(got)
		for j := range c {
			c[j].Value = bytes.Clone(c[j].Value)
		}
		earlier, earlierCopy = append(earlier, got), append(earlierCopy, c)
		// One envelope after the input's headers, which stage two writes
		// out as the seven headers stage one wrote before it.
		if len(got) != len(r.Headers)+1 || got[len(r.Headers)].Key != wire.HeaderRepartition {
			rt.Fatalf("headers %q: want the input's and one %s", got, wire.HeaderRepartition)
		}
		if exp := wire.ExpandRepartition(got); !reflect.DeepEqual(exp, want) {
			rt.Fatalf("expanded headers %q, want %q", exp, want)
		}
		if v := got[len(r.Headers)].Value; cap(v) != len(v) {
			rt.Fatalf("the envelope has room past its end: %d of %d", len(v), cap(v))
		}
		if cap(got)-len(got) < 1 {
			rt.Fatal("no room for the part header")
		}
		// topics.repartition_format: headers writes those seven itself,
		// for a stage two of a version before the envelope.
		old, err := (&Engine{expand: true}).repartitionHeaders(st, r, et, before, aligned, 4, fill)
		if err != nil {
			rt.Fatal(err)
		}
		if !reflect.DeepEqual(old, want) {
			rt.Fatalf("repartition_format headers wrote %q, want %q", old, want)
		}
	})
}
