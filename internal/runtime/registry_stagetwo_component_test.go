package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
	"github.com/sidestream/sidestream/internal/wire"
)

// A registry-backed input through stage two: a routing route, a window
// route whose aggregates read exact int64s, floats, a nested record and a
// decimal, and an assembly of two parts (one the whole decoded value, one
// a projection). Stage two must read what stage one decoded, never the
// Avro or Protobuf bytes as JSON.

const stageTwoAvro = `{"type":"record","name":"Event","namespace":"shop","fields":[
	{"name":"id","type":"long"},
	{"name":"customer","type":"string"},
	{"name":"amount","type":"long"},
	{"name":"big","type":"long"},
	{"name":"price","type":"double"},
	{"name":"code","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
	{"name":"meta","type":{"type":"record","name":"Meta","fields":[
		{"name":"score","type":"long"},
		{"name":"tags","type":{"type":"array","items":"string"}}]}},
	{"name":"kind","type":"string"},
	{"name":"oid","type":"long"},
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`

// stageTwoProto is the same event in Protobuf (code as its decimal text).
const stageTwoProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Event {
  message Meta {
    int64 score = 1;
    repeated string tags = 2;
  }
  int64 id = 1;
  string customer = 2;
  int64 amount = 3;
  int64 big = 4;
  double price = 5;
  string code = 6;
  Meta meta = 7;
  string kind = 8;
  int64 oid = 9;
  google.protobuf.Timestamp ts = 10;
}
`

const stageTwoTopology = `application_id: sr-stage-two
brokers: [127.0.0.1:9092]
guarantee: exactly_once
topics:
  partitions: 4
inputs:
  - topic: events
    format: %s
schema_registry:
  url: %s
event_time:
  field: ts
  format: epoch_ms
routing:
  match: all
  default: drop
routes:
  - name: big
    topic: events.big
    when: amount > 1500
    key: customer
  - name: per-customer
    topic: events.windows
    when: amount %% 5 != 0
    window:
      type: tumbling
      size: 10s
      max_out_of_orderness: 1s
      grace: 1h
      emit: update
      group_by: customer
      late_topic: events.late
      repartition: %t
      aggregates:
        - {name: n, fn: count}
        - {name: total, fn: sum, of: amount}
        - {name: top, fn: max, of: big}
        - {name: price, fn: sum, of: price}
        - {name: score, fn: max, of: meta.score}
        - {name: tags, fn: sum, of: len(meta.tags)}
        - {name: code, fn: last, of: code}
  - name: rest
    topic: events.rest
    when: amount <= 1500 && amount %% 5 == 0
  - name: orders
    topic: events.assembled
    assemble:
      id: oid
      parts:
        - {name: head, source: events, when: kind == "head"}
        - name: line
          source: events
          when: kind == "line"
          project: {sku: customer, qty: amount, tags: meta.tags}
      ttl: 1h
      incomplete_topic: events.incomplete
dirty:
  topic: events.dirty
`

// srEvent is one generated event; its fields are what both encodings
// carry.
type srEvent struct {
	i                int
	customer, kind   string
	amount, big, oid int64
	price            float64
	cents            int64 // code: cents / 100
	score            int64
	tags             []string
	ts               int64
}

const stageTwoBase = 1_790_000_000_000

func makeSREvent(i int) srEvent {
	e := srEvent{i: i, customer: fmt.Sprintf("c%d", i%37), amount: int64(i*7919) % 2000,
		big: 1<<53 + int64(i)*3 + 1, oid: int64(i / 2), price: float64(i%1000) / 100,
		cents: int64(i*31) % 10000, score: int64(i*13)%1000 - 500, ts: stageTwoBase + int64(i)*3, kind: "head"}
	if i%2 == 1 {
		e.kind = "line"
	}
	for j := range i % 4 {
		e.tags = append(e.tags, fmt.Sprintf("t%d", (i+j)%7))
	}
	return e
}

// avroCode is the Avro decimal in the value model: an int when integral,
// a float64 when it holds the value exactly, else its text.
func (e srEvent) avroCode() any {
	switch {
	case e.cents%100 == 0:
		return e.cents / 100
	case e.cents%25 == 0:
		return float64(e.cents) / 100
	}
	return e.codeText()
}

func (e srEvent) codeText() string { return fmt.Sprintf("%d.%02d", e.cents/100, e.cents%100) }

// code is the decoded code of the format.
func (e srEvent) code(format string) any {
	if format == "avro" {
		return e.avroCode()
	}
	return e.codeText()
}

func (e srEvent) tagsAny() []any {
	out := make([]any, len(e.tags))
	for i, t := range e.tags {
		out[i] = t
	}
	return out
}

// value is the decoded record in the value model, as JSON renders it.
func (e srEvent) value(format string) map[string]any {
	return map[string]any{"id": e.i, "customer": e.customer, "amount": e.amount, "big": e.big, "price": e.price,
		"code": e.code(format), "meta": map[string]any{"score": e.score, "tags": e.tagsAny()},
		"kind": e.kind, "oid": e.oid, "ts": e.ts}
}

func (e srEvent) routes() (big, window, rest bool) {
	big, window = e.amount > 1500, e.amount%5 != 0
	return big, window, !big && !window
}

// srCodec writes events and hostile frames in one format.
type srCodec struct {
	format  string
	encode  func(t *testing.T, e srEvent) []byte
	hostile func(t *testing.T, k int, good []byte) ([]byte, string)
}

func avroCodec(t *testing.T, f *fakeRegistry) srCodec {
	id := f.register(t, "events-value", stageTwoAvro, sr.TypeAvro)
	s, err := avro.Parse(stageTwoAvro)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(t *testing.T, e srEvent) []byte {
		tags := e.tags
		if tags == nil {
			tags = []string{}
		}
		v := map[string]any{"id": int64(e.i), "customer": e.customer, "amount": e.amount, "big": e.big, "price": e.price,
			"code": big.NewRat(e.cents, 100), "meta": map[string]any{"score": e.score, "tags": tags},
			"kind": e.kind, "oid": e.oid, "ts": time.UnixMilli(e.ts).UTC()}
		payload, err := avro.Marshal(s, v)
		if err != nil {
			t.Fatal(err)
		}
		return confluentFrame(t, id, nil, payload)
	}
	return srCodec{format: "avro", encode: enc, hostile: func(t *testing.T, k int, good []byte) ([]byte, string) {
		switch k % 3 {
		case 0:
			return fmt.Appendf(nil, `{"hostile":%d}`, k), wire.ReasonNotRegistryFramed
		case 1:
			return confluentFrame(t, 9999, nil, good[5:]), wire.ReasonUnknownSchemaID
		}
		return bytes.Clone(good[:5+(len(good)-5)/2]), wire.ReasonAvroDecode
	}}
}

func protoCodec(t *testing.T, f *fakeRegistry) srCodec {
	id := f.register(t, "events-value", stageTwoProto, sr.TypeProtobuf)
	varint := func(b []byte, n protowire.Number, v int64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), uint64(v))
	}
	str := func(b []byte, n protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), s)
	}
	payload := func(e srEvent) []byte {
		var meta, ts, b []byte
		meta = varint(meta, 1, e.score)
		for _, tg := range e.tags {
			meta = str(meta, 2, tg)
		}
		ts = varint(ts, 1, e.ts/1000)
		ts = varint(ts, 2, e.ts%1000*1_000_000)
		b = varint(b, 1, int64(e.i))
		b = str(b, 2, e.customer)
		b = varint(b, 3, e.amount)
		b = varint(b, 4, e.big)
		b = protowire.AppendFixed64(protowire.AppendTag(b, 5, protowire.Fixed64Type), math.Float64bits(e.price))
		b = str(b, 6, e.codeText())
		b = protowire.AppendBytes(protowire.AppendTag(b, 7, protowire.BytesType), meta)
		b = str(b, 8, e.kind)
		b = varint(b, 9, e.oid)
		return protowire.AppendBytes(protowire.AppendTag(b, 10, protowire.BytesType), ts)
	}
	enc := func(t *testing.T, e srEvent) []byte { return confluentFrame(t, id, []int{0}, payload(e)) }
	return srCodec{format: "protobuf", encode: enc, hostile: func(t *testing.T, k int, good []byte) ([]byte, string) {
		switch k % 3 {
		case 0:
			return fmt.Appendf(nil, `{"hostile":%d}`, k), wire.ReasonNotRegistryFramed
		case 1:
			return confluentFrame(t, 9999, []int{0}, good[6:]), wire.ReasonUnknownSchemaID
		}
		// Message index 7: the schema has one top-level message.
		return confluentFrame(t, id, []int{7}, good[6:]), wire.ReasonProtobufDecode
	}}
}

// srInput is what was produced: events by their value, hostile frames'
// reasons by their value.
type srInput struct {
	events  map[string]srEvent
	hostile map[string]string
	total   int
}

// produceStageTwo writes n events and, after every 53rd, a hostile frame.
// byGroup keys the events by their group key (a direct window's input).
func produceStageTwo(t *testing.T, brokers []string, c srCodec, n int, byGroup bool) *srInput {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	in := &srInput{events: make(map[string]srEvent, n), hostile: map[string]string{}}
	send := func(key, val []byte) {
		in.total++
		cl.Produce(context.Background(), &kgo.Record{Key: key, Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	for i := range n {
		e := makeSREvent(i)
		val := c.encode(t, e)
		in.events[string(val)] = e
		key := fmt.Appendf(nil, "k%d", i)
		if byGroup {
			key = []byte(e.customer)
		}
		send(key, val)
		if i%53 == 0 {
			h, reason := c.hostile(t, i/53, val)
			if _, dup := in.hostile[string(h)]; dup {
				t.Fatalf("hostile frame %d repeats", i/53)
			}
			in.hostile[string(h)] = reason
			send(fmt.Appendf(nil, "h%d", i), h)
		}
	}
	// Then one event per group key past the last window's end (and its
	// max_out_of_orderness), so every task's watermark fires every window
	// of the events. Windowed (amount 1), not big, no part; their own
	// window never fires.
	flushTS := (stageTwoBase+int64(n-1)*3)/10_000*10_000 + 10_000 + 2_000
	for k := range 37 {
		e := srEvent{i: n + k, customer: fmt.Sprintf("c%d", k), amount: 1, kind: "flush", ts: flushTS}
		key := fmt.Appendf(nil, "f%d", k)
		if byGroup {
			key = []byte(e.customer)
		}
		send(key, c.encode(t, e))
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return in
}

func TestAvroInputThroughStageTwo(t *testing.T) {
	runStageTwo(t, func(f *fakeRegistry) srCodec { return avroCodec(t, f) }, false)
}

func TestProtobufInputThroughStageTwo(t *testing.T) {
	runStageTwo(t, func(f *fakeRegistry) srCodec { return protoCodec(t, f) }, false)
}

// TestAvroInputThroughDirectStageTwo: the window route with repartition:
// false (the input keyed by the group key), so stage two runs in the
// input partition's batch on stage one's records in process.
func TestAvroInputThroughDirectStageTwo(t *testing.T) {
	runStageTwo(t, func(f *fakeRegistry) srCodec { return avroCodec(t, f) }, true)
}

func runStageTwo(t *testing.T, codec func(*fakeRegistry) srCodec, direct bool) {
	n := stageTwoRecords
	if testing.Short() {
		n = 5_000
	}
	brokers := newCluster(t, kfake.SeedTopics(4, "events")).ListenAddrs()
	f := newFakeRegistry(t)
	c := codec(f)
	top := stageonetest.CompileAt(t, "stage-two.yaml", fmt.Sprintf(stageTwoTopology, c.format, f.URL(), !direct), brokers, ".")
	in := produceStageTwo(t, brokers, c, n, direct)
	r := start(t, top, "a")
	waitStageTwo(t, r, top, in.total, 5*time.Minute)
	r.stop(t)
	if open := sumGauge(r.p.Metrics(), "orders"); open != 0 {
		t.Errorf("%v assemblies still open after every part was processed", open)
	}
	recs := readCommitted(t, brokers, top.OutputTopics()...)
	byTopic := map[string][]*kgo.Record{}
	for _, rec := range recs {
		byTopic[rec.Topic] = append(byTopic[rec.Topic], rec)
	}
	checkStageTwoRoutes(t, in, byTopic)
	checkStageTwoDirty(t, in, byTopic["events.dirty"])
	checkStageTwoWindows(t, c.format, in, byTopic["events.windows"])
	checkStageTwoAssemblies(t, c.format, in, byTopic["events.assembled"])
	for _, side := range []string{"events.late", "events.incomplete"} {
		if len(byTopic[side]) != 0 {
			t.Errorf("%d records on %s, want none (grace and ttl are an hour)", len(byTopic[side]), side)
		}
	}
	s := r.p.Metrics().Snapshot()
	if !s.Conserved() || int(s.Dirty) != len(in.hostile) || int(s.Late) != 0 {
		t.Fatalf("metrics %+v: want conserved, %d dirty (the hostile frames), none late", s, len(in.hostile))
	}
}

// waitStageTwo waits until every input record is consumed and stage two
// has consumed every record stage one wrote to a repartition topic.
func waitStageTwo(t *testing.T, r *running, top *plan.Plan, inputs int, limit time.Duration) {
	t.Helper()
	m := r.p.Metrics()
	win, asm := top.Route("per-customer"), top.Route("orders")
	deadline := time.Now().Add(limit)
	for {
		in := testutil.ToFloat64(m.Consumed.WithLabelValues("events"))
		ws := testutil.ToFloat64(m.Repartitioned.WithLabelValues(win.Window.RepartitionTopic))
		ww := testutil.ToFloat64(m.RouteIn.WithLabelValues(win.Name))
		as := testutil.ToFloat64(m.Repartitioned.WithLabelValues(asm.Assembly.RepartitionTopic))
		aw := testutil.ToFloat64(m.RouteIn.WithLabelValues(asm.Name))
		if int(in) >= inputs && ws >= ww && as >= aw && ww > 0 && aw > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: inputs %v of %d, window stage two %v of %v, assembly stage two %v of %v", limit, in, inputs, ws, ww, as, aw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkStageTwoRoutes: every event once on each routing route its
// predicates name (the original bytes), nothing else there.
func checkStageTwoRoutes(t *testing.T, in *srInput, byTopic map[string][]*kgo.Record) {
	t.Helper()
	for _, route := range []string{"events.big", "events.rest"} {
		seen := map[int]int{}
		for _, rec := range byTopic[route] {
			e, ok := in.events[string(rec.Value)]
			isBig, _, isRest := e.routes()
			if !ok || (route == "events.big" && (!isBig || string(rec.Key) != e.customer)) || (route == "events.rest" && !isRest) {
				t.Errorf("record key %q on %s is not an event routed there (known %v, %+v)", rec.Key, route, ok, e)
				continue
			}
			seen[e.i]++
		}
		want := 0
		for _, e := range in.events {
			isBig, _, isRest := e.routes()
			if (route == "events.big" && isBig) || (route == "events.rest" && isRest) {
				want++
				if seen[e.i] != 1 {
					t.Errorf("event %d on %s %d times, want once", e.i, route, seen[e.i])
				}
			}
		}
		if len(byTopic[route]) != want {
			t.Errorf("%s: %d records, want %d", route, len(byTopic[route]), want)
		}
	}
}

// checkStageTwoDirty: each hostile frame once on dirty with its reason
// and its bytes; nothing else is dirty (no stage-two record above all).
func checkStageTwoDirty(t *testing.T, in *srInput, dirty []*kgo.Record) {
	t.Helper()
	seen := map[string]int{}
	for _, rec := range dirty {
		want, ok := in.hostile[string(rec.Value)]
		reason := wire.String(rec.Headers, wire.HeaderReason)
		if !ok || reason != want {
			t.Errorf("dirty record (stage %q, reason %q, %s) is not a hostile frame with its reason (%q)", wire.String(rec.Headers, wire.HeaderStage), reason, wire.String(rec.Headers, wire.HeaderError), want)
			continue
		}
		seen[string(rec.Value)]++
	}
	for v := range in.hostile {
		if seen[v] != 1 {
			t.Errorf("hostile frame %q on dirty %d times, want once", v, seen[v])
		}
	}
}

// winAgg is one window's aggregates, computed by the test from the
// generated events.
type winAgg struct {
	n, total, top, score, tags int64
	price                      *big.Float
	code                       any
	codeTS                     int64
}

func stageTwoOracle(format string, in *srInput) map[string]*winAgg {
	out := map[string]*winAgg{}
	for _, e := range in.events {
		if _, w, _ := e.routes(); !w {
			continue
		}
		k := e.customer + "@" + strconv.FormatInt(e.ts/10_000*10_000, 10)
		a := out[k]
		if a == nil {
			a = &winAgg{top: math.MinInt64, score: math.MinInt64, price: new(big.Float).SetPrec(2000), codeTS: math.MinInt64}
			out[k] = a
		}
		a.n++
		a.total += e.amount
		a.top = max(a.top, e.big)
		a.score = max(a.score, e.score)
		a.tags += int64(len(e.tags))
		a.price.Add(a.price, new(big.Float).SetFloat64(e.price))
		if e.ts > a.codeTS {
			a.code, a.codeTS = e.code(format), e.ts
		}
	}
	return out
}

// checkStageTwoWindows: each window's last revision equals the oracle,
// exactly (int64 beyond 2^53, the float sum rounded once, the decimal as
// the value model has it).
func checkStageTwoWindows(t *testing.T, format string, in *srInput, recs []*kgo.Record) {
	t.Helper()
	type result struct {
		Key        string                     `json:"key"`
		Start      int64                      `json:"window_start"`
		Revision   int64                      `json:"revision"`
		Aggregates map[string]json.RawMessage `json:"aggregates"`
	}
	last := map[string]result{}
	for _, rec := range recs {
		var res result
		if err := json.Unmarshal(rec.Value, &res); err != nil {
			t.Fatalf("window result %q: %v", rec.Value, err)
		}
		k := res.Key + "@" + strconv.FormatInt(res.Start, 10)
		if res.Revision > last[k].Revision {
			last[k] = res
		}
	}
	want := stageTwoOracle(format, in)
	if len(last) != len(want) {
		t.Errorf("%d windows, want %d", len(last), len(want))
	}
	bad := 0
	for k, w := range want {
		got, ok := last[k]
		price, _ := w.price.Float64()
		exp := map[string]any{"n": w.n, "total": w.total, "top": w.top, "price": price, "score": w.score, "tags": w.tags, "code": w.code}
		for name, v := range exp {
			if !ok || !sameJSON(t, got.Aggregates[name], v) {
				bad++
				if bad <= 10 {
					t.Errorf("window %s aggregate %s = %s, want %v", k, name, got.Aggregates[name], v)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d aggregates differ from the oracle", bad)
	}
}

// checkStageTwoAssemblies: one complete assembly per order, its head the
// JSON of the decoded value and its line the projection.
func checkStageTwoAssemblies(t *testing.T, format string, in *srInput, recs []*kgo.Record) {
	t.Helper()
	want := map[string][2]srEvent{}
	for _, e := range in.events {
		pair := want[strconv.FormatInt(e.oid, 10)]
		pair[e.i%2] = e
		want[strconv.FormatInt(e.oid, 10)] = pair
	}
	seen := map[string]bool{}
	bad := 0
	for _, rec := range recs {
		var a assembled
		if err := json.Unmarshal(rec.Value, &a); err != nil {
			t.Fatalf("assembled %q: %v", rec.Value, err)
		}
		pair, ok := want[a.ID]
		if !ok || seen[a.ID] || !a.Complete || string(rec.Key) != a.ID {
			t.Errorf("assembled %s: known %v, seen before %v", rec.Value, ok, seen[a.ID])
			continue
		}
		seen[a.ID] = true
		head, line := pair[0], pair[1]
		if !sameJSON(t, a.Parts["head"], head.value(format)) ||
			!sameJSON(t, a.Parts["line"], map[string]any{"sku": line.customer, "qty": line.amount, "tags": line.tagsAny()}) {
			bad++
			if bad <= 5 {
				t.Errorf("assembly %s: head %s line %s; want head %v", a.ID, a.Parts["head"], a.Parts["line"], head.value(format))
			}
		}
	}
	if len(seen) != len(want) || bad > 0 {
		t.Errorf("%d of %d orders assembled, %d with parts other than the oracle's", len(seen), len(want), bad)
	}
}

// sameJSON reports whether raw is the JSON of want, numbers compared
// exactly: integers as int64, others as float64.
func sameJSON(t *testing.T, raw json.RawMessage, want any) bool {
	t.Helper()
	if len(raw) == 0 {
		return false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var got any
	if err := d.Decode(&got); err != nil {
		t.Errorf("%q is not JSON: %v", raw, err)
		return false
	}
	return jsonEqual(got, want)
}

func jsonEqual(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, v := range w {
			if gv, ok := g[k]; !ok || !jsonEqual(gv, v) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !jsonEqual(g[i], w[i]) {
				return false
			}
		}
		return true
	case int:
		return jsonEqual(got, int64(w))
	case int64:
		n, ok := got.(json.Number)
		i, err := n.Int64()
		return ok && err == nil && i == w
	case float64:
		n, ok := got.(json.Number)
		f, err := n.Float64()
		return ok && err == nil && f == w
	}
	return got == want
}
