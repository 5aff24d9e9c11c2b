package stageone

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/registry"
	"github.com/sidestream/sidestream/internal/wire"
)

// fakeDecoder answers every value with one outcome.
type fakeDecoder struct {
	v   *registry.Value
	err error
}

func (f fakeDecoder) Decode(context.Context, []byte) (*registry.Value, error) { return f.v, f.err }

var avroSections = []string{"inputs: [{topic: in, format: avro}]\n",
	"event_time: {field: ts, format: epoch_ms, max_ahead: 1h, on_ahead: clamp}\n",
	"routes:\n  - {name: big, topic: big, when: 'amount > 1000', key: customer}\n  - {name: main, topic: main}\n",
	"routing: {default: main}\n"}

func registryEngine(t *testing.T, d RegistryDecoder) (*Engine, *plan.Plan) {
	t.Helper()
	top := topo(t, avroSections...)
	return New(top, WithDecoders(map[string]RegistryDecoder{"in": d})), top
}

func framed() *kgo.Record {
	return &kgo.Record{Topic: "in", Partition: 2, Offset: 7, Value: []byte{0, 0, 0, 0, 1, 2, 4}, Timestamp: recordTime}
}

func TestRegistryDecodedFieldsRoute(t *testing.T) {
	e, top := registryEngine(t, fakeDecoder{v: &registry.Value{SchemaID: 1, Fields: map[string]any{
		"amount": 2000, "customer": "c-1", "ts": int(recordTime.UnixMilli() + 7_200_000), "unread": "x"}}})
	tally := metrics.NewTally()
	srcMax := int64(math.MinInt64)
	r := framed()
	outs, err := e.ProcessFrom(context.Background(), r, &srcMax, tally)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Topic != "big" || string(outs[0].Key) != "c-1" || string(outs[0].Value) != string(r.Value) {
		t.Fatalf("outputs %v: want the original bytes on big, keyed c-1", outs)
	}
	// Two hours ahead, clamped to max_ahead as for JSON.
	if tally.Clamped != 1 || srcMax != recordTime.UnixMilli()+3_600_000 {
		t.Fatalf("clamped %d, source max %d: want 1 and the record time + 1h", tally.Clamped, srcMax)
	}
	checkConserved(t, top, r, outs, tally)
}

func TestRegistryRecordErrorIsDirty(t *testing.T) {
	rerr := &registry.RecordError{Stage: wire.StageDecode, Reason: wire.ReasonUnknownSchemaID, SchemaID: 9, Err: errors.New("schema id 9 is not registered")}
	e, _ := registryEngine(t, fakeDecoder{err: rerr})
	tally := metrics.NewTally()
	r := framed()
	outs, err := e.ProcessFrom(context.Background(), r, nil, tally)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Topic != "dirty" || string(outs[0].Value) != string(r.Value) {
		t.Fatalf("outputs %v: want one dirty record with the original bytes", outs)
	}
	if reason, _ := header(outs[0], wire.HeaderReason); reason != wire.ReasonUnknownSchemaID {
		t.Fatalf("reason %q", reason)
	}
	if tally.Dirty[[2]string{wire.StageDecode, wire.ReasonUnknownSchemaID}] != 1 || tally.Consumed["in"] != 1 {
		t.Fatalf("tally %+v", tally)
	}
}

// A registry outage is the batch's, never the record's: a BatchError,
// nothing counted, the source progress untouched.
func TestRegistryOutageIsNotARecordError(t *testing.T) {
	for name, d := range map[string]RegistryDecoder{
		"unavailable": fakeDecoder{err: &registry.UnavailableError{SchemaID: 3, Err: errors.New("503")}},
		"no decoder":  nil,
	} {
		t.Run(name, func(t *testing.T) {
			e, _ := registryEngine(t, d)
			tally := metrics.NewTally()
			srcMax := int64(math.MinInt64)
			outs, err := e.ProcessFrom(context.Background(), framed(), &srcMax, tally)
			var be *BatchError
			if !errors.As(err, &be) || be.Offset != 7 || len(outs) != 0 {
				t.Fatalf("ProcessFrom = %v, %v: want a BatchError and no outputs", outs, err)
			}
			if name == "unavailable" && !registry.IsRetryable(err) {
				t.Fatalf("%v is not retryable", err)
			}
			if !tally.Empty() || srcMax != math.MinInt64 {
				t.Fatalf("tally %+v, source max %d: nothing may be counted", tally, srcMax)
			}
		})
	}
}
