package stageone

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/registry"
	"github.com/sidestream/sidestream/internal/wire"
)

// A window route whose aggregates read n, x and meta (nested); the other
// route reads level, which the window's records must not carry.
var fieldsWindowSections = []string{
	"routing: {match: all, default: drop}\n",
	"routes:\n  - {name: errors, topic: errors, when: 'level == \"ERROR\"'}\n" +
		"  - name: win\n    topic: win\n    window:\n      type: tumbling\n      size: 1m\n      group_by: service\n      late_topic: win.late\n" +
		"      aggregates:\n        - {name: c, fn: count}\n        - {name: s, fn: sum, of: n}\n        - {name: m, fn: max, of: x}\n        - {name: d, fn: max, of: meta.depth}\n",
}

// windowRecord is stage one's record of value on the win route's
// repartition topic.
func windowRecord(t *testing.T, e *Engine, top *plan.Plan, value string) *kgo.Record {
	t.Helper()
	tally := metrics.NewTally()
	in := &kgo.Record{Topic: "in", Key: []byte("k"), Value: []byte(value), Timestamp: recordTime}
	outs := e.Process(in, tally)
	checkConserved(t, top, in, outs, tally)
	for _, o := range outs {
		if o.Topic == top.Route("win").Window.RepartitionTopic {
			return o
		}
	}
	t.Fatalf("no repartitioned record among %v (dirty %v)", outs, tally.Dirty)
	return nil
}

func TestWindowRecordCarriesFields(t *testing.T) {
	top := topo(t, fieldsWindowSections...)
	e := New(top)
	v := `{"ts":1700000000000,"level":"ERROR","service":"api","n":9007199254740993,"x":0.1,"meta":{"depth":[1,{"a":null}]},"other":"not read"}`
	rec := windowRecord(t, e, top, v)
	if string(rec.Value) != v {
		t.Fatalf("value %s: the original bytes must stay (late and overflow write them)", rec.Value)
	}
	h, ok := header(&kgo.Record{Headers: wire.ExpandRepartition(rec.Headers)}, wire.HeaderFields)
	if !ok {
		t.Fatal("no fields header")
	}
	got, err := wire.DecodeFields([]byte(h))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": 9007199254740993, "x": 0.1, "meta": map[string]any{"depth": []any{1, map[string]any{"a": nil}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields %#v, want %#v (the aggregates' fields only, exact)", got, want)
	}
	d, rerr := e.RepartitionedFields(rec)
	if rerr != nil || !reflect.DeepEqual(d.Fields, want) {
		t.Fatalf("stage two reads %#v, %v", d, rerr)
	}
}

// TestRepartitionedFieldsFallback: without the header, or with a version
// this build does not know, stage two decodes the JSON value; a header
// that does not decode is dirty with its own reason; a registry input's
// record without it says why it is not JSON.
func TestRepartitionedFieldsFallback(t *testing.T) {
	top := topo(t, fieldsWindowSections...)
	e := New(top)
	env := windowRecord(t, e, top, `{"ts":1700000000000,"level":"INFO","service":"api","n":3}`)
	// The record as written before the envelope (wire.ExpandRepartition).
	rec := &kgo.Record{Topic: env.Topic, Key: env.Key, Value: env.Value, Headers: wire.ExpandRepartition(env.Headers), Timestamp: env.Timestamp}
	without := func(extra ...kgo.RecordHeader) *kgo.Record {
		c := *rec
		c.Headers = nil
		for _, h := range rec.Headers {
			if h.Key != wire.HeaderFields {
				c.Headers = append(c.Headers, h)
			}
		}
		c.Headers = append(c.Headers, extra...)
		return &c
	}
	for name, r := range map[string]*kgo.Record{
		"no header":   without(),
		"version 9":   without(kgo.RecordHeader{Key: wire.HeaderFields, Value: []byte{9, 0, 0xff}}),
		"with header": rec,
		"envelope":    env,
	} {
		d, rerr := e.RepartitionedFields(r)
		if rerr != nil || d.Fields["n"] != 3 {
			t.Errorf("%s: %#v, %v; want n = 3", name, d, rerr)
		}
	}
	for name, h := range map[string][]byte{"empty": {}, "truncated": {1, 1, 1, 'n', wire.FieldsVersion + 2}, "garbage": {1, 0xff, 0xff}} {
		_, rerr := e.RepartitionedFields(without(kgo.RecordHeader{Key: wire.HeaderFields, Value: h}))
		if rerr == nil || rerr.Stage != wire.StageWindow || rerr.Reason != wire.ReasonBadFields {
			t.Errorf("%s: %v, want %s/%s", name, rerr, wire.StageWindow, wire.ReasonBadFields)
		}
	}
	// The input's own header of that name comes first: stage one's, last, wins.
	forged := *rec
	forged.Headers = append([]kgo.RecordHeader{{Key: wire.HeaderFields, Value: []byte{1, 0xff}}}, rec.Headers...)
	if d, rerr := e.RepartitionedFields(&forged); rerr != nil || d.Fields["n"] != 3 {
		t.Errorf("an input header of the same name: %#v, %v", d, rerr)
	}
	// Before an envelope, an input's own fields header is not read either.
	forged = *env
	forged.Headers = append([]kgo.RecordHeader{{Key: wire.HeaderFields, Value: []byte{1, 0xff}}}, env.Headers...)
	if d, rerr := e.RepartitionedFields(&forged); rerr != nil || d.Fields["n"] != 3 {
		t.Errorf("an input header of the same name before the envelope: %#v, %v", d, rerr)
	}

	rtop := topo(t, append([]string{"inputs: [{topic: in, format: avro}]\n", "event_time: {field: ts, format: epoch_ms}\n"}, fieldsWindowSections...)...)
	reg := New(rtop)
	avroRec := &kgo.Record{Value: []byte{0, 0, 0, 0, 1, 2}, Headers: []kgo.RecordHeader{{Key: wire.HeaderTopic, Value: []byte("in")}}}
	_, rerr := reg.RepartitionedFields(avroRec)
	if rerr == nil || rerr.Reason != wire.ReasonInvalidJSON || !strings.Contains(rerr.Error(), "avro") || !strings.Contains(rerr.Error(), wire.HeaderFields) {
		t.Errorf("registry input without the header: %v", rerr)
	}
}

// valueGen draws values of the runtime's value model, nested.
func valueGen(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 6
		if depth > 0 {
			kinds = 8
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return rapid.Int().Draw(t, "int")
		case 3:
			return rapid.SampledFrom([]int{math.MaxInt64, math.MinInt64, 1<<53 + 1, -(1<<53 + 1), 0}).Draw(t, "edge")
		case 4:
			return math.Float64frombits(rapid.Uint64().Draw(t, "bits"))
		case 5:
			return rapid.String().Draw(t, "string")
		case 6:
			return rapid.SliceOfN(valueGen(depth-1), 0, 4).Draw(t, "array")
		}
		return rapid.MapOfN(rapid.String(), valueGen(depth-1), 0, 4).Draw(t, "object")
	})
}

// TestFieldsRoundTripProperty: any fields of the value model cross the
// header unchanged (floats bit for bit, NaN and -0 included).
func TestFieldsRoundTripProperty(t *testing.T) {
	top := topo(t, fieldsWindowSections...)
	e := New(top)
	rapid.Check(t, func(t *rapid.T) {
		fields := rapid.MapOfN(rapid.StringMatching(`[a-z]{1,4}`), valueGen(3), 0, 6).Draw(t, "fields")
		names := make([]string, 0, len(fields)+1)
		for k := range fields {
			names = append(names, k)
		}
		names = append(names, "absent")
		b, err := wire.AppendFields(nil, names, fields)
		if err != nil {
			t.Fatal(err)
		}
		d, rerr := e.RepartitionedFields(&kgo.Record{Headers: []kgo.RecordHeader{{Key: wire.HeaderFields, Value: b}}})
		if rerr != nil {
			t.Fatal(rerr)
		}
		if canonical(t, d.Fields) != canonical(t, fields) {
			t.Fatalf("round trip %#v, want %#v", d.Fields, fields)
		}
	})
}

// TestFieldsEqualJSONDecodeProperty: for a JSON input, what stage two
// reads from the header is what it read before by decoding the value
// again, for every value the aggregates' fields may hold.
func TestFieldsEqualJSONDecodeProperty(t *testing.T) {
	top := topo(t, fieldsWindowSections...)
	e := New(top)
	rapid.Check(t, func(rt *rapid.T) {
		obj := map[string]any{"ts": 1700000000000, "service": "api", "level": "INFO"}
		for _, f := range []string{"n", "x", "meta"} {
			if rapid.Bool().Draw(rt, "has "+f) {
				obj[f] = jsonable(valueGen(3).Draw(rt, f))
			}
		}
		v, err := json.Marshal(obj)
		if err != nil {
			rt.Fatal(err)
		}
		rec := windowRecord(t, e, top, string(v))
		fromHeader, rerr := e.RepartitionedFields(rec)
		if rerr != nil {
			rt.Fatal(rerr)
		}
		fromJSON, rerr := e.DecodeFields(rec.Value)
		if rerr != nil {
			rt.Fatal(rerr)
		}
		// The aggregates' fields; the JSON decode takes every field an
		// expression reads (level, service), the header only these, and
		// not a null one (an absent field is the same nil to an
		// aggregate's expression).
		aggFields := map[string]any{}
		for _, f := range []string{"n", "x", "meta"} {
			if x, ok := fromJSON.Fields[f]; ok && x != nil {
				aggFields[f] = x
			}
		}
		if canonical(rt, fromHeader.Fields) != canonical(rt, aggFields) {
			rt.Fatalf("header %#v, JSON %#v; value %s", fromHeader.Fields, aggFields, v)
		}
	})
}

// jsonable replaces the floats JSON has no text for.
func jsonable(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case []any:
		for i := range x {
			x[i] = jsonable(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = jsonable(x[k])
		}
	}
	return v
}

// canonical is the fields' encoding with every name in order: equal
// values, floats bit for bit, have equal encodings.
func canonical(t interface{ Fatal(...any) }, fields map[string]any) string {
	b, err := wire.AppendFields(nil, slices.Sorted(maps.Keys(fields)), fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An assembly of a registry-backed input: a part of the whole record
// nests the decoded value as JSON (keys sorted, exact integers), a
// projected part is its projection, and a value JSON cannot hold (NaN)
// makes the record dirty.
var registryPartSections = []string{"inputs: [{topic: in, format: avro}]\n",
	"event_time: {field: ts, format: epoch_ms}\n",
	"routes:\n  - {name: main, topic: main}\n" +
		"  - name: asm\n    topic: asm\n    assemble:\n      id: oid\n      ttl: 1m\n      incomplete_topic: asm.incomplete\n" +
		"      parts:\n        - {name: whole, source: in}\n        - {name: via, source: main}\n        - {name: proj, source: in, project: {o: oid}}\n",
	"routing: {default: main}\n"}

func TestRegistryPartIsDecodedJSON(t *testing.T) {
	top := topo(t, registryPartSections...)
	fields := map[string]any{"oid": 9007199254740993, "ts": int(recordTime.UnixMilli()), "z": "last", "a": map[string]any{"b": []any{1.5, nil}}}
	e := New(top, WithDecoders(map[string]RegistryDecoder{"in": fakeDecoder{v: &registry.Value{SchemaID: 1, Fields: fields}}}))
	tally := metrics.NewTally()
	r := framed()
	outs, err := e.ProcessFrom(context.Background(), r, nil, tally)
	if err != nil {
		t.Fatal(err)
	}
	checkConserved(t, top, r, outs, tally)
	want := map[string]string{
		"whole": `{"a":{"b":[1.5,null]},"oid":9007199254740993,"ts":` + strconv.FormatInt(recordTime.UnixMilli(), 10) + `,"z":"last"}`,
		"proj":  `{"o":9007199254740993}`,
	}
	want["via"] = want["whole"]
	parts := 0
	for _, o := range outs {
		switch o.Topic {
		case "main":
			if string(o.Value) != string(r.Value) {
				t.Errorf("main: %x, want the original bytes", o.Value)
			}
		case top.Route("asm").Assembly.RepartitionTopic:
			parts++
			name, _ := header(o, wire.HeaderPart)
			if string(o.Value) != want[name] {
				t.Errorf("part %s: %s, want %s", name, o.Value, want[name])
			}
		}
	}
	if parts != 3 {
		t.Fatalf("%d parts, want 3: %v", parts, outs)
	}

	fields["a"] = math.NaN()
	tally = metrics.NewTally()
	outs, err = e.ProcessFrom(context.Background(), r, nil, tally)
	if err != nil {
		t.Fatal(err)
	}
	if reason, _ := header(outs[0], wire.HeaderReason); len(outs) != 1 || reason != wire.ReasonBadPartValue {
		t.Fatalf("NaN in a whole part: %v (reason %q), want one dirty record, %s", outs, reason, wire.ReasonBadPartValue)
	}
}
