package runtime

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sidestream/sidestream/internal/stageone/stageonetest"
	"github.com/sidestream/sidestream/internal/wire"
)

// The merchants table's Avro writer schema: since is a logical time.
const avroMerchant = `{"type":"record","name":"Merchant","namespace":"shop","fields":[
	{"name":"id","type":"string"},
	{"name":"tier","type":"string"},
	{"name":"since","type":{"type":"long","logicalType":"timestamp-millis"}}]}`

// The regions table's Protobuf writer schema.
const protoRegion = `syntax = "proto3";
package geo;
message Region {
  string zone = 1;
}
`

const registryTablesTopology = `application_id: pm-registry
inputs: [{topic: payments}]
schema_registry: {url: %s}
event_time: {field: ts, format: epoch_ms}
routing: {default: rest}
routes:
  - {name: vip, topic: vip, when: 'lookup("merchants", merchant)?.tier == "vip"'}
  - {name: eu, topic: eu, when: 'lookup("regions", region)?.zone == "z1"'}
  - {name: rest, topic: rest}
dirty: {topic: payments.dirty}
tables:
  - {name: merchants, topic: merchants, format: avro, key: id, mode: as_of, time: since, history: 1h}
  - {name: regions, topic: regions, format: protobuf}
`

// TestTablesRegistryFormatsComponent: an Avro as_of table (keyed by a
// field, its version time an Avro timestamp-millis) and a Protobuf
// current table (keyed by the Kafka key) decode through the schema
// registry into the value model lookup() returns for JSON rows, and route
// payments; a row without the magic byte, one of an id the registry does
// not have and one whose payload its schema cannot read are each counted
// as undecodable and skipped. A payment older than the merchants' history
// is answered by the oldest version kept and marked with
// sidestream.lookup.too_old; the others are not.
func TestTablesRegistryFormatsComponent(t *testing.T) {
	brokers := newCluster(t, kfake.SeedTopics(1, "payments", "merchants", "regions")).ListenAddrs()
	f := newFakeRegistry(t)
	mid := f.register(t, "merchants-value", avroMerchant, sr.TypeAvro)
	rid := f.register(t, "regions-value", protoRegion, sr.TypeProtobuf)
	top := stageonetest.CompileAt(t, "pm.yaml", fmt.Sprintf(registryTablesTopology, f.URL()), brokers, ".")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	produce := func(topic, key string, value []byte) {
		t.Helper()
		r := &kgo.Record{Topic: topic, Value: value}
		if key != "" {
			r.Key = []byte(key)
		}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	schema := avro.MustParse(avroMerchant)
	merchant := func(id, tier string, since int64) []byte {
		b, err := avro.Marshal(schema, map[string]any{"id": id, "tier": tier, "since": time.UnixMilli(since)})
		if err != nil {
			t.Fatal(err)
		}
		return confluentFrame(t, mid, nil, b)
	}
	const hour = int64(time.Hour / time.Millisecond)
	produce("merchants", "", merchant("m1", "basic", 1000))
	produce("merchants", "", merchant("m1", "vip", 5000))
	produce("merchants", "", merchant("m1", "vip", 2*hour))
	produce("merchants", "", merchant("m2", "basic", 1000))
	produce("merchants", "", []byte(`{"id":"m3","tier":"vip","since":1000}`)) // no magic byte
	produce("merchants", "", confluentFrame(t, 9999, nil, []byte{2, 'x'}))    // an id the registry lacks
	produce("merchants", "", merchant("m4", "vip", 1000)[:8])                 // a truncated payload
	var zone []byte
	zone = protowire.AppendTag(zone, 1, protowire.BytesType)
	zone = protowire.AppendString(zone, "z1")
	produce("regions", "eu", confluentFrame(t, rid, []int{0}, zone))
	for _, v := range []string{
		`{"id":"p1","merchant":"m1","ts":2000}`,               // before the history, m1 changed since: too old, vip
		`{"id":"p2","merchant":"m1","ts":7300000}`,            // vip, exact
		`{"id":"p3","merchant":"m2","ts":2000}`,               // basic; m2 never changed: exact
		`{"id":"p4","merchant":"m3","region":"eu","ts":2000}`, // m3's row was skipped: a miss; eu
		`{"id":"p5","merchant":"m4","ts":2000}`,               // m4's row was skipped: a miss
	} {
		produce("payments", "", []byte(v))
	}
	a := start(t, top, "a")
	waitConsumed(t, a.p.Metrics(), 5, time.Minute)
	a.stop(t)
	routed, marked := map[string][]string{}, map[string]string{}
	for _, r := range readCommitted(t, brokers, "vip", "eu", "rest", "payments.dirty") {
		id := strings.Split(strings.Split(string(r.Value), `"id":"`)[1], `"`)[0]
		routed[r.Topic] = append(routed[r.Topic], id)
		if v, ok := stageonetest.Header(r, wire.HeaderLookupTooOld); ok {
			marked[id] = v
		}
	}
	for _, ids := range routed {
		sort.Strings(ids)
	}
	if strings.Join(routed["vip"], ",") != "p1,p2" || strings.Join(routed["eu"], ",") != "p4" ||
		strings.Join(routed["rest"], ",") != "p3,p5" || len(routed["payments.dirty"]) != 0 {
		t.Fatalf("routed %v", routed)
	}
	if len(marked) != 1 || marked["p1"] != "merchants" {
		t.Fatalf("marked too old: %v, want only p1 (merchants)", marked)
	}
	m := a.p.Metrics().Tables
	if got := testutil.ToFloat64(m.Undecodable.WithLabelValues("merchants")); got != 3 {
		t.Errorf("undecodable merchants rows %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.Undecodable.WithLabelValues("regions")); got != 0 {
		t.Errorf("undecodable regions rows %v", got)
	}
	row, found, _ := a.p.Tables().Get("merchants", "m2")
	if !found || row["tier"] != "basic" || row["since"] != 1000 {
		t.Errorf("m2's row %v (found %v): want the value model's fields (since an int of epoch ms)", row, found)
	}
}

// TestTablesRegistryOutageComponent: while the schema registry cannot
// answer, a registry table's row is neither applied nor skipped: the load
// waits (the table is not loaded, no payment is processed) and asks
// again; once the registry answers, the row is applied and the payment
// routes by it, nothing counted undecodable.
func TestTablesRegistryOutageComponent(t *testing.T) {
	brokers := newCluster(t, kfake.SeedTopics(1, "payments", "merchants")).ListenAddrs()
	f := newFakeRegistry(t)
	id := f.register(t, "merchants-value", avroMerchant, sr.TypeAvro)
	top := stageonetest.CompileAt(t, "pm.yaml", fmt.Sprintf(`application_id: pm-outage
inputs: [{topic: payments}]
schema_registry: {url: %s}
routing: {default: rest}
routes:
  - {name: vip, topic: vip, when: 'lookup("merchants", merchant)?.tier == "vip"'}
  - {name: rest, topic: rest}
dirty: {topic: payments.dirty}
tables: [{name: merchants, topic: merchants, format: avro, key: id}]
`, f.URL()), brokers, ".")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	row, err := avro.Marshal(avro.MustParse(avroMerchant), map[string]any{"id": "m1", "tier": "vip", "since": time.UnixMilli(1000)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "merchants", Value: confluentFrame(t, id, nil, row)},
		&kgo.Record{Topic: "payments", Value: []byte(`{"id":"p1","merchant":"m1"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f.failing.Store(true)
	a := start(t, top, "a")
	deadline := time.Now().Add(time.Minute)
	for f.refused.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the table asked the failing registry %d times", f.refused.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := a.p.Metrics().Tables
	if got := testutil.ToFloat64(m.Loaded.WithLabelValues("merchants")); got != 0 {
		t.Fatalf("loaded %v during the outage", got)
	}
	if got := testutil.ToFloat64(m.Undecodable.WithLabelValues("merchants")); got != 0 {
		t.Fatalf("undecodable %v during the outage: a row the registry could not answer for was skipped", got)
	}
	f.failing.Store(false)
	waitConsumed(t, a.p.Metrics(), 1, time.Minute)
	a.stop(t)
	if got := readCommitted(t, brokers, "vip"); len(got) != 1 {
		t.Fatalf("vip: %d records, want p1", len(got))
	}
	if got := testutil.ToFloat64(m.Undecodable.WithLabelValues("merchants")); got != 0 {
		t.Errorf("undecodable %v", got)
	}
}
