package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
	"github.com/sidestream/sidestream/internal/wire"
)

// The Avro writer schemas of the orders topic: version 2 adds a note.
const (
	avroOrderV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"customer","type":"string"},
		{"name":"amount","type":"long"},
		{"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","REFUND"]}},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	avroOrderV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"customer","type":"string"},
		{"name":"amount","type":"long"},
		{"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","REFUND"]}},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"note","type":["null","string"],"default":null}]}`
	// avroOrderV3 is registered only mid-run by the outage test, so
	// its records need a lookup while the registry fails.
	avroOrderV3 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"customer","type":"string"},
		{"name":"amount","type":"long"},
		{"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID","REFUND"]}},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"note","type":["null","string"],"default":null},
		{"name":"channel","type":"string","default":"web"}]}`
)

const avroTopology = `application_id: avro-router
brokers: [127.0.0.1:9092]
guarantee: %s
inputs:
  - topic: orders
    format: avro
schema_registry:
  url: %s
event_time:
  field: ts
  format: epoch_ms
routing:
  default: rest
routes:
  - name: big
    topic: orders.big
    when: amount > 1000
    key: customer
    project:
      id: id
      who: customer
      status: status
  - name: refunds
    topic: orders.refunds
    when: status == "REFUND"
  - name: rest
    topic: orders.rest
dirty:
  topic: orders.dirty
`

// fakeRegistry is srfake over HTTP that answers 500 to schema lookups
// while failing is set.
type fakeRegistry struct {
	*srfake.Registry
	failing atomic.Bool
	refused atomic.Int64
}

func newFakeRegistry(t *testing.T) *fakeRegistry {
	t.Helper()
	f := &fakeRegistry{Registry: srfake.New()}
	f.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !f.failing.Load() {
			return false
		}
		f.refused.Add(1)
		http.Error(w, `{"error_code":50001,"message":"store unavailable"}`, http.StatusInternalServerError)
		return true
	})
	t.Cleanup(f.Close)
	return f
}

func (f *fakeRegistry) register(t *testing.T, subject, schema string, typ sr.SchemaType) int {
	t.Helper()
	id, _, err := f.RegisterSchema(subject, sr.Schema{Schema: schema, Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// avroOrder is one generated order and where the topology must send it.
type avroOrder struct {
	i                int
	customer, status string
	amount           int64
}

func (o avroOrder) route() string {
	switch {
	case o.amount > 1000:
		return "orders.big"
	case o.status == "REFUND":
		return "orders.refunds"
	}
	return "orders.rest"
}

func makeOrder(i int) avroOrder {
	return avroOrder{i: i, customer: fmt.Sprintf("c%d", i%37), amount: int64(i*7919) % 2000, status: []string{"NEW", "PAID", "REFUND"}[i%3]}
}

// encode frames o with schema id and its writer schema (v2 and v3 set the
// note, v3 the channel).
func (o avroOrder) encode(t *testing.T, id int, schema string) []byte {
	t.Helper()
	s, err := avro.Parse(schema)
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{"id": int64(o.i), "customer": o.customer, "amount": o.amount, "status": o.status,
		"ts": time.UnixMilli(1_790_000_000_000 + int64(o.i)).UTC()}
	if schema != avroOrderV1 {
		v["note"] = map[string]any{"string": fmt.Sprintf("n%d", o.i)}
	}
	if schema == avroOrderV3 {
		v["channel"] = "app"
	}
	payload, err := avro.Marshal(s, v)
	if err != nil {
		t.Fatal(err)
	}
	return confluentFrame(t, id, nil, payload)
}

func confluentFrame(t *testing.T, id int, index []int, payload []byte) []byte {
	t.Helper()
	var h sr.ConfluentHeader
	b, err := h.AppendEncode(nil, id, index)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, payload...)
}

// registryInput is what was produced: each good order by its value, each
// hostile frame's wanted dirty reason by its value.
type registryInput struct {
	orders  map[string]avroOrder // value -> order
	hostile map[string]string    // value -> reason
	n       int
}

// produceAvro writes orders from..to-1: every 53rd is a hostile frame
// (plain JSON, an unknown schema id, a truncated payload, in turn), the
// others alternate between the two schema versions' ids.
func produceAvro(t *testing.T, brokers []string, in *registryInput, from, to int, ids []int, schemas []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < to; i++ {
		o := makeOrder(i)
		v := i % len(ids)
		val := o.encode(t, ids[v], schemas[v])
		if i%53 == 0 {
			switch (i / 53) % 3 {
			case 0:
				val = fmt.Appendf(nil, `{"id":%d}`, i)
				in.hostile[string(val)] = wire.ReasonNotRegistryFramed
			case 1:
				val = o.encode(t, 9999, schemas[v])
				in.hostile[string(val)] = wire.ReasonUnknownSchemaID
			case 2:
				val = val[:5+(len(val)-5)/2]
				in.hostile[string(val)] = wire.ReasonAvroDecode
			}
		} else {
			in.orders[string(val)] = o
		}
		in.n++
		cl.Produce(context.Background(), &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// verifyAvro checks the read-back against the predicates: every order
// once on its route (big: keyed by customer, the projection; the others:
// the original bytes), every hostile frame once on dirty with its reason
// and its original bytes, nothing else.
func verifyAvro(t *testing.T, in *registryInput, recs []*kgo.Record) {
	t.Helper()
	seen := map[int]int{}
	dirty := map[string]int{}
	for _, r := range recs {
		switch r.Topic {
		case "orders.dirty":
			want, ok := in.hostile[string(r.Value)]
			reason, _ := stageonetest.Header(r, wire.HeaderReason)
			if !ok || reason != want {
				t.Errorf("dirty record %q with reason %q: want a hostile frame with its reason (%q)", r.Value, reason, want)
			}
			dirty[string(r.Value)]++
		case "orders.big":
			var p struct {
				ID     int    `json:"id"`
				Who    string `json:"who"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal(r.Value, &p); err != nil {
				t.Fatalf("big: %q: %v", r.Value, err)
			}
			o := makeOrder(p.ID)
			if o.route() != r.Topic || string(r.Key) != o.customer || p.Who != o.customer || p.Status != o.status {
				t.Errorf("big record key %q value %s: want order %+v on %s", r.Key, r.Value, o, o.route())
			}
			seen[p.ID]++
		default:
			o, ok := in.orders[string(r.Value)]
			if !ok || o.route() != r.Topic {
				t.Errorf("record on %s is not an order routed there (%+v, known %v)", r.Topic, o, ok)
				continue
			}
			seen[o.i]++
		}
	}
	var dup, missing int
	for _, o := range in.orders {
		switch seen[o.i] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	for v := range in.hostile {
		if dirty[v] != 1 {
			t.Errorf("hostile frame %q reached dirty %d times, want once", v, dirty[v])
		}
	}
	if dup > 0 || missing > 0 || len(recs) != len(in.orders)+len(in.hostile) {
		t.Fatalf("%d orders: %d duplicated, %d missing; read back %d records, want %d", len(in.orders), dup, missing, len(recs), len(in.orders)+len(in.hostile))
	}
}

func registryCluster(t *testing.T) []string {
	t.Helper()
	return newCluster(t, kfake.SeedTopics(4, "orders")).ListenAddrs()
}

func counterValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

// TestAvroInputExactlyOnce: 20,000 records of two Avro schema versions
// and hostile frames through a routing topology (a predicate on decoded
// fields, a key, a projection) under exactly-once, read back
// read_committed.
func TestAvroInputExactlyOnce(t *testing.T) {
	const n = 20_000
	brokers := registryCluster(t)
	f := newFakeRegistry(t)
	ids := []int{f.register(t, "orders-value", avroOrderV1, sr.TypeAvro), f.register(t, "orders-value", avroOrderV2, sr.TypeAvro)}
	if ids[0] == ids[1] {
		t.Fatalf("both versions got id %d", ids[0])
	}
	top := stageonetest.CompileAt(t, "avro.yaml", fmt.Sprintf(avroTopology, config.ExactlyOnce, f.URL()), brokers, ".")
	in := &registryInput{orders: map[string]avroOrder{}, hostile: map[string]string{}}
	produceAvro(t, brokers, in, 0, n, ids, []string{avroOrderV1, avroOrderV2})
	r := start(t, top, "a")
	waitConsumed(t, r.p.Metrics(), n, 3*time.Minute)
	r.stop(t)
	verifyAvro(t, in, readCommitted(t, brokers, top.OutputTopics()...))
	s := r.p.Metrics().Snapshot()
	if !s.Conserved() || int(s.Consumed) != n || int(s.Dirty) != len(in.hostile) || int(s.Routed) != len(in.orders) {
		t.Fatalf("metrics: %+v; want %d consumed, %d dirty, %d routed", s, n, len(in.hostile), len(in.orders))
	}
	if m := r.p.Metrics().SchemaRegistry; counterValue(t, m.Lookups) < float64(n-len(in.hostile)/3) || counterValue(t, m.CacheHits) == 0 {
		t.Fatalf("registry lookups %v, cache hits %v", counterValue(t, m.Lookups), counterValue(t, m.CacheHits))
	}
}

// TestAvroInputRegistryOutage: the registry answers 500 for a while
// mid-run, when records of a schema id not yet cached arrive. The batch
// aborts and is retried; nothing is dirtied by the outage, every record
// is written once, and /readyz says why while it lasts.
func TestAvroInputRegistryOutage(t *testing.T) {
	eachGuarantee(t, registryOutage)
}

func registryOutage(t *testing.T, g config.Guarantee) {
	const half = 4000
	brokers := registryCluster(t)
	f := newFakeRegistry(t)
	ids := []int{f.register(t, "orders-value", avroOrderV1, sr.TypeAvro), f.register(t, "orders-value", avroOrderV2, sr.TypeAvro)}
	top := stageonetest.CompileAt(t, "avro.yaml", fmt.Sprintf(avroTopology, g, f.URL()), brokers, ".")
	in := &registryInput{orders: map[string]avroOrder{}, hostile: map[string]string{}}
	produceAvro(t, brokers, in, 0, half, ids, []string{avroOrderV1, avroOrderV2})
	r := start(t, top, "a")
	waitConsumed(t, r.p.Metrics(), half, 2*time.Minute)
	waitReady(t, r.p, true, time.Minute)
	dirtyBefore := r.p.Metrics().Snapshot().Dirty

	f.failing.Store(true)
	v3 := f.register(t, "orders-value", avroOrderV3, sr.TypeAvro) // through the API: the fault is HTTP's
	produceAvro(t, brokers, in, half, 2*half, []int{v3, ids[0]}, []string{avroOrderV3, avroOrderV1})
	why := waitReady(t, r.p, false, time.Minute)
	if !strings.Contains(why, "schema registry") || !strings.Contains(why, "unavailable") {
		t.Fatalf("/readyz during the outage: %q, want it to name the schema registry", why)
	}
	waitAborts(t, r, 2, time.Minute) // tried again with backoff, still failing
	if s := r.p.Metrics().Snapshot(); s.Dirty != dirtyBefore || int(s.Consumed) > half {
		t.Fatalf("during the outage: dirty %v (before %v), consumed %v (before %d)", s.Dirty, dirtyBefore, s.Consumed, half)
	}
	if ready, _ := r.p.Ready(); ready {
		t.Fatal("ready while the registry still fails")
	}
	f.failing.Store(false)

	waitConsumed(t, r.p.Metrics(), 2*half, 2*time.Minute)
	waitReady(t, r.p, true, time.Minute)
	r.stop(t)
	if f.refused.Load() == 0 {
		t.Fatal("the registry never refused a lookup: the outage was not exercised")
	}
	recs := readCommitted(t, brokers, top.OutputTopics()...)
	if g == config.AtLeastOnce {
		recs = dedupe(recs) // at-least-once may write a replayed batch twice
	}
	verifyAvro(t, in, recs)
	if s := r.p.Metrics().Snapshot(); !s.Conserved() || int(s.Dirty) != len(in.hostile) {
		t.Fatalf("metrics %+v: want %d dirty (the hostile frames only)", s, len(in.hostile))
	}
}

// dedupe keeps one of each (topic, key, value).
func dedupe(recs []*kgo.Record) []*kgo.Record {
	seen := map[string]bool{}
	var out []*kgo.Record
	for _, r := range recs {
		k := r.Topic + "\x00" + string(r.Key) + "\x00" + string(r.Value)
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

// waitReady waits until Ready says want and returns its reason.
func waitReady(t *testing.T, p *Processor, want bool, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, why := p.Ready()
		if ok == want {
			return why
		}
		if time.Now().After(deadline) {
			t.Fatalf("ready = %v (%q) after %s, want %v", ok, why, limit, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitAborts(t *testing.T, r *running, n float64, limit time.Duration) {
	t.Helper()
	c := r.p.Metrics().Aborts.WithLabelValues("registry_unavailable")
	deadline := time.Now().Add(limit)
	for counterValue(t, c) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%v registry_unavailable aborts after %s, want %v", counterValue(t, c), limit, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// protobufReading is the Protobuf input's schema: a Timestamp event time.
const protobufReading = `syntax = "proto3";
package iot;
import "google/protobuf/timestamp.proto";
message Reading {
  string sensor = 1;
  google.protobuf.Timestamp at = 2;
  int64 value = 3;
}
`

const protobufTopology = `application_id: proto-router
brokers: [127.0.0.1:9092]
inputs:
  - topic: readings
    format: protobuf
schema_registry:
  url: %s
event_time:
  field: at
  format: epoch_ms
routing:
  default: normal
routes:
  - name: high
    topic: readings.high
    when: value > 50 && _event_time == 1790000000000 + value * 1000
    key: sensor
  - name: normal
    topic: readings.normal
dirty:
  topic: readings.dirty
`

// TestProtobufInputTimestampEventTime: Protobuf records whose event time
// is a google.protobuf.Timestamp; a route reads it (_event_time), and a
// record without it goes to dirty (missing_event_time).
func TestProtobufInputTimestampEventTime(t *testing.T) {
	const n = 2000
	brokers := newCluster(t, kfake.SeedTopics(2, "readings")).ListenAddrs()
	f := newFakeRegistry(t)
	id := f.register(t, "readings-value", protobufReading, sr.TypeProtobuf)
	top := stageonetest.CompileAt(t, "proto.yaml", fmt.Sprintf(protobufTopology, f.URL()), brokers, ".")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("readings"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	want := map[string]string{} // key -> topic
	for i := range n {
		val, at := int64(i%100), int64(1_790_000_000)+int64(i%100)
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, fmt.Sprintf("s%d", i))
		key, topic := fmt.Sprintf("s%d", i), "readings.normal"
		if i%10 != 9 {
			var ts []byte
			ts = protowire.AppendTag(ts, 1, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(at))
			ts = protowire.AppendTag(ts, 2, protowire.VarintType)
			ts = protowire.AppendVarint(ts, 999_000) // below the ms: floored
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendBytes(b, ts)
			if val > 50 {
				topic = "readings.high"
			}
		} else {
			topic = "readings.dirty" // no Timestamp: missing event time
		}
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(val))
		want[key] = topic
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(key), Value: confluentFrame(t, id, []int{0}, b)}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	wg.Wait()
	cl.Close()
	r := start(t, top, "a")
	waitConsumed(t, r.p.Metrics(), n, 2*time.Minute)
	r.stop(t)
	recs := readCommitted(t, brokers, top.OutputTopics()...)
	if len(recs) != n {
		t.Fatalf("read back %d records, want %d", len(recs), n)
	}
	for _, rec := range recs {
		if want[string(rec.Key)] != rec.Topic {
			t.Errorf("key %s on %s, want %s", rec.Key, rec.Topic, want[string(rec.Key)])
		}
		if rec.Topic == "readings.dirty" {
			if reason, _ := stageonetest.Header(rec, wire.HeaderReason); reason != wire.ReasonMissingTime {
				t.Errorf("dirty %s: reason %q, want %q", rec.Key, reason, wire.ReasonMissingTime)
			}
		}
	}
}
