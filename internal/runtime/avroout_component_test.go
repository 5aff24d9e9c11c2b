package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/kclient"
	"github.com/sidestream/sidestream/internal/registry"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
)

// avroOutTopology reads JSON orders and writes Avro: a projection
// (routes[0], line 12) and a window's finals (routes[1]). (The input is
// JSON: stage two of a window route decodes repartitioned values as JSON,
// so a window over a registry-backed input dirties its records.)
const avroOutTopology = `application_id: avro-out
brokers: [127.0.0.1:9092]
inputs:
  - topic: orders
schema_registry:
  url: %s
event_time: {field: ts, format: epoch_ms}
routing:
  match: all
  default: drop
routes:
  - name: orders-avro
    topic: orders.avro
    format: avro
    key: customer
    project:
      id: int(id)
      who: string(customer)
      amount: int(amount)
      quarter: float(amount) / 4
      big: amount > 1000
      status: string(status)
  - name: per-customer
    topic: orders.per-customer
    format: avro
    window:
      type: tumbling
      size: 1m
      emit: final
      group_by: string(customer)
      late_topic: orders.late
      aggregates:
        - {name: n, fn: count}
        - {name: total, fn: sum, of: amount}
        - {name: last_status, fn: last, of: string(status)}
dirty:
  topic: orders.dirty
`

// The window every order of the test falls in (the orders' ts are
// 1_790_000_000_000 + i ms, i < 600): [1789999980000, 1790000040000).
const avroOutWindow = 1_789_999_980_000

// TestAvroOutputs: a projection route and a window route write Avro,
// read back read_committed and decoded through the registry by the id in
// each record's header: the ids registered at start under
// <topic>-value, values exactly as projected and as a brute force
// aggregates them. The registry is down when the processor starts: it
// waits, not ready, and registers once the registry answers.
func TestAvroOutputs(t *testing.T) {
	const n = 600
	brokers := registryCluster(t)
	f := newFakeRegistry(t)
	top := stageonetest.CompileAt(t, "avro-out.yaml", fmt.Sprintf(avroOutTopology, f.URL()), brokers, ".")
	orders := map[int]avroOrder{}
	produceOrders(t, brokers, 0, n, orders)
	// One later order on every input partition moves the aligned
	// watermark past the orders' window, so its finals are written.
	for p := int32(0); p < 4; p++ {
		produceOrders(t, brokers, 600_000+int(p), 600_001+int(p), orders, p)
	}

	f.failing.Store(true)
	r := start(t, top, "a")
	waitRefused(t, f, 2, time.Minute) // tried again with backoff
	if ready, why := r.p.Ready(); ready || !strings.Contains(why, "schema registry") || !strings.Contains(why, "not registered") {
		t.Fatalf("/readyz while the registry is down at start: %v %q", ready, why)
	}
	if s := r.p.Metrics().Snapshot(); s.Consumed != 0 {
		t.Fatalf("consumed %v before the avro schemas were registered", s.Consumed)
	}
	f.failing.Store(false)
	waitConsumed(t, r.p.Metrics(), len(orders), 2*time.Minute)
	waitReady(t, r.p, true, time.Minute)
	finalsOut := r.p.Metrics().WindowResults.WithLabelValues("per-customer", "final")
	for deadline := time.Now().Add(2 * time.Minute); counterValue(t, finalsOut) < float64(len(wantFinals(orders))); {
		if time.Now().After(deadline) {
			t.Fatalf("%v window finals written, want %d; metrics %+v", counterValue(t, finalsOut), len(wantFinals(orders)), r.p.Metrics().Snapshot())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.stop(t)

	ids := map[string]int{}
	for _, rt := range top.AvroRoutes() {
		ss, ok := f.GetSchema(rt.Avro.Subject, 1)
		if !ok || ss.Schema.Schema != rt.Avro.Schema || ss.Type != sr.TypeAvro {
			t.Fatalf("subject %s: %+v %v, want the route's schema as version 1", rt.Avro.Subject, ss, ok)
		}
		ids[rt.Topic] = ss.ID
	}
	recs := readCommitted(t, brokers, "orders.avro", "orders.per-customer", "orders.dirty", "orders.late")
	dec := registryDecoder(t, f.URL())
	var projected, finals int
	for _, rec := range recs {
		got := decodeOutput(t, dec, ids, rec)
		switch rec.Topic {
		case "orders.avro":
			checkProjected(t, orders, rec, got)
			projected++
		case "orders.per-customer":
			checkFinal(t, orders, rec, got)
			finals++
		default:
			t.Errorf("record on %s: %q", rec.Topic, rec.Value)
		}
	}
	if want := wantFinals(orders); projected != len(orders) || finals != len(want) {
		t.Fatalf("read back %d projected, %d finals; want %d and %d", projected, finals, len(orders), len(want))
	}
}

// produceOrders writes orders from..to-1 as JSON (to partition p when
// given, else by key) and notes them in orders.
func produceOrders(t *testing.T, brokers []string, from, to int, orders map[int]avroOrder, p ...int32) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("orders")}
	if len(p) > 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < to; i++ {
		o := makeOrder(i)
		orders[i] = o
		v := fmt.Appendf(nil, `{"id":%d,"customer":%q,"amount":%d,"status":%q,"ts":%d}`, o.i, o.customer, o.amount, o.status, 1_790_000_000_000+int64(o.i))
		rec := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: v}
		if len(p) > 0 {
			rec.Partition = p[0]
		}
		if err := cl.ProduceSync(context.Background(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func waitRefused(t *testing.T, f *fakeRegistry, n int64, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for f.refused.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the registry refused %d requests after %s, want %d", f.refused.Load(), limit, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func registryDecoder(t *testing.T, url string) *registry.Decoder {
	t.Helper()
	cl, err := kclient.RegistryClient(config.SchemaRegistry{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(cl)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := registry.NewDecoder(reg, registry.Format(config.InputAvro))
	if err != nil {
		t.Fatal(err)
	}
	return dec
}

// decodeOutput checks the record's header names its topic's registered
// id and decodes it through the registry by that id.
func decodeOutput(t *testing.T, dec *registry.Decoder, ids map[string]int, rec *kgo.Record) map[string]any {
	t.Helper()
	var h sr.ConfluentHeader
	id, _, err := h.DecodeID(rec.Value)
	if err != nil || id != ids[rec.Topic] {
		t.Fatalf("%s record: schema id %d (%v), want %d", rec.Topic, id, err, ids[rec.Topic])
	}
	v, err := dec.Decode(context.Background(), rec.Value)
	if err != nil {
		t.Fatalf("%s record: %v", rec.Topic, err)
	}
	return v.Fields
}

func checkProjected(t *testing.T, orders map[int]avroOrder, rec *kgo.Record, got map[string]any) {
	t.Helper()
	id, _ := got["id"].(int)
	o, ok := orders[id]
	want := map[string]any{"id": o.i, "who": o.customer, "amount": int(o.amount), "quarter": float64(o.amount) / 4,
		"big": o.amount > 1000, "status": o.status}
	if !ok || string(rec.Key) != o.customer || !reflect.DeepEqual(got, want) {
		t.Errorf("projected record key %q %#v, want key %q %#v", rec.Key, got, o.customer, want)
	}
}

type avroFinal struct {
	n, total, lastI int
	last            string
}

// wantFinals is the brute force: per customer, the orders of the window.
func wantFinals(orders map[int]avroOrder) map[string]*avroFinal {
	out := map[string]*avroFinal{}
	for _, o := range orders {
		if o.i >= 600_000 {
			continue // the watermark movers: their windows stay open
		}
		w := out[o.customer]
		if w == nil {
			w = &avroFinal{lastI: -1}
			out[o.customer] = w
		}
		w.n++
		w.total += int(o.amount)
		if o.i > w.lastI {
			w.lastI, w.last = o.i, o.status
		}
	}
	return out
}

func checkFinal(t *testing.T, orders map[int]avroOrder, rec *kgo.Record, got map[string]any) {
	t.Helper()
	key, _ := got["group_key"].(string)
	w := wantFinals(orders)[key]
	if w == nil {
		t.Errorf("final of unknown group %q: %#v", key, got)
		return
	}
	rev, _ := got["revision"].(int)
	want := map[string]any{"group_key": key, "window_start": avroOutWindow, "window_end": avroOutWindow + 60_000,
		"n": w.n, "total": float64(w.total), "last_status": w.last, "revision": rev, "final": true}
	if string(rec.Key) != fmt.Sprintf("%s@%d", key, avroOutWindow) || rev < 1 || !reflect.DeepEqual(got, want) {
		t.Errorf("final key %q %#v, want %#v", rec.Key, got, want)
	}
}

// backwardCompat makes srfake (whose compatibility check is a stub)
// refuse a registration as Confluent's registry does: when the subject's
// level is BACKWARD, the new schema must read its latest version (hamba's
// schema compatibility), or the answer is 409.
func backwardCompat(t *testing.T, f *fakeRegistry, subject string) {
	t.Helper()
	if err := f.SetCompat(subject, sr.CompatBackward); err != nil {
		t.Fatal(err)
	}
	f.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost || r.URL.Path != "/subjects/"+subject+"/versions" {
			return false
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var s sr.Schema
		latest, ok := f.GetSchema(subject, 1)
		if json.Unmarshal(body, &s) != nil || !ok {
			return false
		}
		reader, err1 := avro.Parse(s.Schema)
		writer, err2 := avro.Parse(latest.Schema.Schema)
		if err1 != nil || err2 != nil {
			return false
		}
		if err := avro.NewSchemaCompatibility().Compatible(reader, writer); err != nil {
			msg := fmt.Sprintf("Schema being registered is incompatible with an earlier schema for subject %q: %v", subject, err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]any{"error_code": 409, "message": msg})
			return true
		}
		return false
	})
}

// TestAvroOutputIncompatibleSubject: the route's subject already holds a
// schema its compatibility level (BACKWARD) does not let the route's
// schema follow: Run fails at start, naming the route and its line, and
// /readyz says why; nothing is consumed.
func TestAvroOutputIncompatibleSubject(t *testing.T) {
	brokers := registryCluster(t)
	f := newFakeRegistry(t)
	// The same record name, but id a required string: the route's
	// nullable long cannot read it.
	f.register(t, "orders.avro-value", `{"type":"record","name":"orders_avro","namespace":"sidestream","fields":[{"name":"id","type":"string"}]}`, sr.TypeAvro)
	backwardCompat(t, f, "orders.avro-value")
	top := stageonetest.CompileAt(t, "avro-out.yaml", fmt.Sprintf(avroOutTopology, f.URL()), brokers, ".")
	produceOrders(t, brokers, 0, 10, map[int]avroOrder{})

	p, err := New(top, WithLogger(testLogger()), WithInstanceID("a"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = p.Run(ctx)
	const want = `routes[0] (line 12), route "orders-avro": subject orders.avro-value refuses the schema: Schema being registered is incompatible`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Run = %v\nwant an error starting %q", err, want)
	}
	if ctx.Err() != nil {
		t.Fatal("Run waited for the context: a refusal is a start error")
	}
	if ready, why := p.Ready(); ready || !strings.Contains(why, want) {
		t.Fatalf("/readyz %v %q, want not ready with the refusal", ready, why)
	}
	if s := p.Metrics().Snapshot(); s.Consumed != 0 {
		t.Fatalf("consumed %v records", s.Consumed)
	}
	if v, ok := f.GetSchema("orders.avro-value", 2); ok {
		t.Fatalf("the refused schema was registered: %+v", v)
	}
}
