package stageone

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/registry"
	"github.com/sidestream/sidestream/internal/wire"
)

// schemaClient is a registry.Client that knows the avro routes' schemas
// by the ids the test gave them.
type schemaClient map[int]string

func (c schemaClient) SchemaByID(_ context.Context, id int) (sr.Schema, error) {
	s, ok := c[id]
	if !ok {
		return sr.Schema{}, &sr.ResponseError{StatusCode: 404, ErrorCode: 40403, Message: "Schema not found"}
	}
	return sr.Schema{Schema: s, Type: sr.TypeAvro}, nil
}

func (schemaClient) SchemaByVersion(context.Context, string, int) (sr.SubjectSchema, error) {
	return sr.SubjectSchema{}, errors.New("no references here")
}

// avroTopo is the avro routes' unit topology; ids numbers them from 7.
func avroTopo(t *testing.T) (*plan.Plan, map[string]int) {
	t.Helper()
	top := topo(t, withSchema, tsMillis, "routing: {match: all, default: drop}\n", `routes:
  - name: typed
    topic: out.typed
    key: id
    format: avro
    project:
      id: id
      latency: latency_ms
      user: user_id
      slow: latency_ms > 100
      svc: upper(service)
      rounded: int(latency_ms)
  - name: whole
    topic: out.whole
    format: avro
  - name: per-service
    topic: out.per-service
    format: avro
    window:
      type: tumbling
      size: 1m
      group_by: service
      late_topic: out.late
      aggregates:
        - {name: n, fn: count}
        - {name: slowest, fn: max, of: latency_ms}
        - {name: last_level, fn: last, of: level}
`)
	ids := map[string]int{}
	for i, r := range top.AvroRoutes() {
		ids[r.Name] = 7 + i
	}
	return top, ids
}

// decodeAvro reads an avro route's value back twice: the Confluent header
// (its id) and the payload with hamba and the route's schema, and through
// our own registry.Decoder (as a reader of the topic would, by id).
func decodeAvro(t *testing.T, rt *plan.RouteNode, wantID int, b []byte) (hamba map[string]any, ours map[string]any) {
	t.Helper()
	var h sr.ConfluentHeader
	id, payload, err := h.DecodeID(b)
	if err != nil || id != wantID {
		t.Fatalf("route %s: header id %d (%v), want %d", rt.Name, id, err, wantID)
	}
	s, err := avro.Parse(rt.Avro.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := avro.Unmarshal(s, payload, &hamba); err != nil {
		t.Fatalf("route %s: hamba: %v", rt.Name, err)
	}
	reg, err := registry.New(schemaClient{wantID: rt.Avro.Schema})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := registry.NewDecoder(reg, registry.Format(config.InputAvro))
	if err != nil {
		t.Fatal(err)
	}
	v, err := dec.Decode(context.Background(), b)
	if err != nil {
		t.Fatalf("route %s: registry.Decoder: %v", rt.Name, err)
	}
	return hamba, v.Fields
}

func processAvro(t *testing.T, top *plan.Plan, ids map[string]int, value string) outcome {
	t.Helper()
	tally := metrics.NewTally()
	r := input(value)
	outs := New(top, WithSchemaIDs(NewSchemaIDs(ids))).Process(r, tally)
	checkConserved(t, top, r, outs, tally)
	return outcome{outs, tally}
}

// A projection and a route without one (the input JSON Schema's fields)
// write Avro behind the header of their id: values exactly as projected,
// absent fields null, keys plain strings.
func TestAvroRoutes(t *testing.T) {
	top, ids := avroTopo(t)
	o := processAvro(t, top, ids, `{"id":"e-1","ts":1700000000000,"level":"INFO","service":"api","message":"hi","latency_ms":250.5,"extra":[1]}`)
	if len(o.outs) != 3 {
		t.Fatalf("outputs %v, want typed, whole and the window's repartition record", topics(o.outs))
	}
	typed, whole := o.outs[0], o.outs[1]
	if string(typed.Key) != "e-1" || string(whole.Key) != "k1" {
		t.Fatalf("keys %q %q: keys stay plain strings", typed.Key, whole.Key)
	}
	hamba, ours := decodeAvro(t, top.Route("typed"), ids["typed"], typed.Value)
	// hamba unwraps the nullable unions; a long is an int64 to it, an
	// int to the JSON input's value model (registry.NumberValue).
	wantHamba := map[string]any{"id": "e-1", "latency": 250.5, "user": nil, "slow": true, "svc": "API", "rounded": int64(250)}
	if !reflect.DeepEqual(hamba, wantHamba) {
		t.Errorf("typed, by hamba:\n got %#v\nwant %#v", hamba, wantHamba)
	}
	wantOurs := map[string]any{"id": "e-1", "latency": 250.5, "user": nil, "slow": true, "svc": "API", "rounded": 250}
	if !reflect.DeepEqual(ours, wantOurs) {
		t.Errorf("typed, by registry.Decoder:\n got %#v\nwant %#v", ours, wantOurs)
	}
	_, ours = decodeAvro(t, top.Route("whole"), ids["whole"], whole.Value)
	wantOurs = map[string]any{"id": "e-1", "latency_ms": 250.5, "level": "INFO", "message": "hi", "service": "api", "ts": 1700000000000, "user_id": nil}
	if !reflect.DeepEqual(ours, wantOurs) {
		t.Errorf("whole, by registry.Decoder:\n got %#v\nwant %#v", ours, wantOurs)
	}
	// The window route's stage one is unchanged: the input record.
	if o.outs[2].Topic != top.Route("per-service").Window.RepartitionTopic || string(o.outs[2].Key) != "api" {
		t.Errorf("window stage one %s key %q", o.outs[2].Topic, o.outs[2].Key)
	}
}

// A value that does not fit its field's type sends the record to dirty
// (avro_encode), never half-written: user_id is an integer by the JSON
// Schema, but 1e300 is no long.
func TestAvroMismatchIsDirty(t *testing.T) {
	top, ids := avroTopo(t)
	o := processAvro(t, top, ids, `{"id":"e-1","ts":1,"level":"INFO","service":"api","message":"hi","latency_ms":3,"user_id":1e300}`)
	o.wantDirty(t, wire.StageRoute, wire.ReasonAvroEncode, `route "typed"`, `field "user"`, "is not a long")

	// An engine given no ids refuses the route's records the same way.
	tally := metrics.NewTally()
	outs := New(top).Process(input(good), tally)
	if tally.Dirty[[2]string{wire.StageRoute, wire.ReasonAvroEncode}] != 1 || len(outs) != 1 {
		t.Fatalf("without ids: %v %v", topics(outs), tally.Dirty)
	}
	if msg, _ := header(outs[0], wire.HeaderError); !strings.Contains(msg, "no schema id") {
		t.Fatalf("without ids: %s", msg)
	}
}

// avroValue takes connect-json's type rules: nothing converts across
// kinds, an integral float is a long, an int a double.
func TestAvroValues(t *testing.T) {
	cases := []struct {
		typ  string
		v    any
		want any // nil with ok false: an error
		ok   bool
	}{
		{config.ConnectString, "x", "x", true},
		{config.ConnectString, []byte("y"), "y", true},
		{config.ConnectString, 3, nil, false},
		{config.ConnectString, nil, nil, true},
		{config.ConnectInt64, 42, int64(42), true},
		{config.ConnectInt64, 3.0, int64(3), true},
		{config.ConnectInt64, "3", nil, false},
		{config.ConnectInt64, 3.5, nil, false},
		{config.ConnectInt64, uint64(math.MaxUint64), nil, false},
		{config.ConnectFloat64, 7, 7.0, true},
		{config.ConnectFloat64, 2.5, 2.5, true},
		{config.ConnectFloat64, true, nil, false},
		{config.ConnectBoolean, false, false, true},
		{config.ConnectBoolean, 1, nil, false},
		{config.ConnectBoolean, map[string]any{}, nil, false},
		{"decimal", 1, nil, false},
	}
	for _, c := range cases {
		got, err := avroValue(c.typ, c.v)
		if (err == nil) != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %#v: got %#v, %v; want %#v (ok %v)", c.typ, c.v, got, err, c.want, c.ok)
		}
	}
}

// A window result written by stage two as Avro: the fixed fields around
// the aggregates; a result whose aggregate has another type is an error
// (stage two sends it to dirty), never a record of another schema.
func TestAvroWindowValue(t *testing.T) {
	top, ids := avroTopo(t)
	e := New(top, WithSchemaIDs(NewSchemaIDs(ids)))
	rt := top.Route("per-service")
	in := `{"key":"api","window_start":60000,"window_end":120000,"aggregates":{"n":3,"slowest":null,"last_level":"WARN"},"revision":2,"final":false}`
	b, err := e.AvroWindowValue(rt, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	_, ours := decodeAvro(t, rt, ids["per-service"], b)
	want := map[string]any{"group_key": "api", "window_start": 60000, "window_end": 120000, "n": 3,
		"slowest": nil, "last_level": "WARN", "revision": 2, "final": false}
	if !reflect.DeepEqual(ours, want) {
		t.Fatalf("window value:\n got %#v\nwant %#v", ours, want)
	}
	for _, bad := range []string{`{"key":"api","aggregates":{"last_level":7}}`, `{"key":`} {
		if _, err := e.AvroWindowValue(rt, []byte(bad)); err == nil {
			t.Errorf("window result %s encoded", bad)
		}
	}
	if _, err := e.AvroWindowValue(top.Route("typed"), []byte(in)); err == nil {
		t.Error("a projection route's ids encoded a window result")
	}
}
