package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/stageone"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestPartsStageOne: stage one of the three-topic example for single
// records: which part record (topic, key, value, part header) or which
// dirty reason each gives.
func TestPartsStageOne(t *testing.T) {
	top := exampleAt(t, "../../examples/order-payment-shipment.yaml", []string{"127.0.0.1:9092"})
	rep := top.Assemblies()[0].Assembly.RepartitionTopic
	e := &stageOne{Engine: stageone.New(top)}
	for _, c := range []struct {
		name, topic, value string
		wantKey, wantPart  string // "" with wantDirty or wantDrop
		wantValue          string
		wantDirty          string // reason
		wantDrop           bool
	}{
		{name: "order", topic: "orders", value: `{"id":"o-1","customer":"c","amount":5}`, wantKey: "o-1", wantPart: "order", wantValue: `{"customer":"c","amount":5}`},
		{name: "numeric id", topic: "orders", value: `{"id":42,"customer":"c","amount":5}`, wantKey: "42", wantPart: "order"},
		{name: "integral float id", topic: "orders", value: `{"id":42.0,"customer":"c","amount":5}`, wantKey: "42", wantPart: "order"},
		{name: "captured payment", topic: "payments", value: `{"order_ref":"o-1","status":"captured","method":"card","amount":5}`, wantKey: "o-1", wantPart: "payment", wantValue: `{"method":"card","paid":5}`},
		{name: "failed payment: predicate false", topic: "payments", value: `{"order_ref":"o-1","status":"failed"}`, wantDrop: true},
		{name: "shipment", topic: "shipments", value: `{"for_order":"o-1","carrier":"dhl","tracking":"T1"}`, wantKey: "o-1", wantPart: "shipment"},
		{name: "missing id", topic: "orders", value: `{"customer":"c","amount":5}`, wantDirty: wire.ReasonBadAssemblyID},
		{name: "null id", topic: "payments", value: `{"order_ref":null,"status":"captured"}`, wantDirty: wire.ReasonBadAssemblyID},
		{name: "bool id", topic: "shipments", value: `{"for_order":true}`, wantDirty: wire.ReasonBadAssemblyID},
		{name: "object id", topic: "orders", value: `{"id":{"a":1}}`, wantDirty: wire.ReasonBadAssemblyID},
		{name: "empty id", topic: "orders", value: `{"id":""}`, wantDirty: wire.ReasonBadAssemblyID},
		{name: "predicate not bool", topic: "payments", value: `{"order_ref":"o-1","status":null}`, wantDrop: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tally := metrics.NewTally()
			outs := e.Process(&kgo.Record{Topic: c.topic, Value: []byte(c.value), Timestamp: time.UnixMilli(1)}, tally)
			switch {
			case c.wantDirty != "":
				if len(outs) != 1 || outs[0].Topic != top.Dirty.Topic || wire.String(outs[0].Headers, wire.HeaderReason) != c.wantDirty {
					t.Fatalf("want dirty %s, got %v", c.wantDirty, outs)
				}
				if !strings.Contains(wire.String(outs[0].Headers, wire.HeaderError), "id") {
					t.Errorf("error header does not name the id: %q", wire.String(outs[0].Headers, wire.HeaderError))
				}
			case c.wantDrop:
				if len(outs) != 0 || tally.Dropped[wire.DropNoRoute] != 1 {
					t.Fatalf("want dropped, got %v", outs)
				}
			default:
				if len(outs) != 1 || outs[0].Topic != rep || string(outs[0].Key) != c.wantKey || wire.String(outs[0].Headers, wire.HeaderPart) != c.wantPart {
					t.Fatalf("want part %s keyed %s on %s, got %+v", c.wantPart, c.wantKey, rep, outs)
				}
				if c.wantValue != "" && string(outs[0].Value) != c.wantValue {
					t.Errorf("value %s, want %s", outs[0].Value, c.wantValue)
				}
				if tally.Routed != 1 || tally.Routes["order-view"] != 1 {
					t.Errorf("a part counts as routed to its assembly: %+v", tally)
				}
			}
		})
	}
}
