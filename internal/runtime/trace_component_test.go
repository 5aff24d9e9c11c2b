package runtime

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sidestream/sidestream/internal/tracing"
	"github.com/sidestream/sidestream/internal/wire"
)

// traceparentOf is the traceparent of test record i: trace id and span
// id both name i, sampled.
func traceparentOf(i int) string {
	return fmt.Sprintf("00-%032x-%016x-01", i+1, i+1)
}

func produceTraced(t testing.TB, brokers []string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func tracedRecord(topic, value string, i int) *kgo.Record {
	r := &kgo.Record{Topic: topic, Value: []byte(value)}
	if i >= 0 {
		r.Headers = []kgo.RecordHeader{{Key: "traceparent", Value: []byte(traceparentOf(i))}}
	}
	return r
}

// TestWindowResultContinuesTrace: a window result carries the
// traceparent of the first of its inputs that had one, through a restart
// between its inputs (the context is in the changelog); a window none of
// whose inputs had one carries none.
func TestWindowResultContinuesTrace(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(1, "keys"))
	top := limitedTopology(t, c.ListenAddrs(), "{max_entries: 1000, overflow_topic: perkey.overflow}")
	produceTraced(t, c.ListenAddrs(),
		tracedRecord("keys", `{"id":"a","ts":1000}`, -1), // no context
		tracedRecord("keys", `{"id":"a","ts":2000}`, 1),
		tracedRecord("keys", `{"id":"b","ts":3000}`, -1),
	)
	a := start(t, top, "a")
	waitConsumedAll(t, a.p.Metrics(), 6, time.Minute)
	a.stop(t)
	produceTraced(t, c.ListenAddrs(),
		tracedRecord("keys", `{"id":"a","ts":4000}`, 2),
		tracedRecord("keys", `{"id":"flush","ts":100000000}`, 3),
	)
	b := start(t, top, "a")
	waitConsumedAll(t, b.p.Metrics(), 4, time.Minute)
	b.stop(t)
	got := map[string]string{}
	for _, r := range readCommitted(t, c.ListenAddrs(), "perkey.out") {
		got[string(r.Key)] = wire.String(r.Headers, wire.HeaderTraceparent)
	}
	want := map[string]string{"a@0": traceparentOf(1), "b@0": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("result %s: traceparent %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// TestAssemblyContinuesTrace: an assembly carries the traceparent of its
// first part (the first that had one); the parts' outputs on their own
// routes keep their inputs' headers as they are.
func TestAssemblyContinuesTrace(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(1, "order-parts"))
	top := exampleAt(t, "../../examples/assemble-orders.yaml", c.ListenAddrs())
	produceTraced(t, c.ListenAddrs(),
		tracedRecord("order-parts", `{"kind":"y","order_id":"o1","customer":"A","country":"fr","ts":1000}`, 7),
		tracedRecord("order-parts", `{"kind":"x","order_id":"o1","items":1,"price":2,"qty":3,"ts":1001}`, 8),
		tracedRecord("order-parts", `{"kind":"x","order_id":"o2","items":1,"price":2,"qty":3,"ts":1002}`, -1),
		tracedRecord("order-parts", `{"kind":"y","order_id":"o2","customer":"B","country":"de","ts":1003}`, 9),
		tracedRecord("order-parts", `{"kind":"x","order_id":"o3","items":1,"price":2,"qty":3,"ts":1004}`, -1),
		tracedRecord("order-parts", `{"kind":"y","order_id":"o3","customer":"C","country":"it","ts":1005}`, -1),
	)
	r := start(t, top, "a")
	// 6 inputs, 6 parts through stage two.
	waitConsumedAll(t, r.p.Metrics(), 12, time.Minute)
	r.stop(t)
	got := map[string]string{}
	for _, rec := range readCommitted(t, c.ListenAddrs(), "orders.assembled") {
		got[string(rec.Key)] = wire.String(rec.Headers, wire.HeaderTraceparent)
	}
	want := map[string]string{"o1": traceparentOf(7), "o2": traceparentOf(9), "o3": ""}
	for k, v := range want {
		if tp, ok := got[k]; !ok || tp != v {
			t.Errorf("assembly %s: traceparent %q (present %v), want %q", k, tp, ok, v)
		}
	}
	for _, rec := range readCommitted(t, c.ListenAddrs(), "orders.lines") {
		if want := map[string]string{"o1": traceparentOf(8)}[string(rec.Key)]; wire.String(rec.Headers, wire.HeaderTraceparent) != want {
			t.Errorf("plain route output %s: headers %v, want traceparent %q", rec.Key, rec.Headers, want)
		}
	}
}

// TestSpansThroughRouter: with a tracer sampling every record, the
// router exports a route span per input under its traceparent and a
// window span per result, a child of the first input's route span (its
// repartitioned record carried that span's context) linked to the other
// input's; the result carries the window span's context.
func TestSpansThroughRouter(t *testing.T) {
	c := newCluster(t, kfake.SeedTopics(1, "keys"))
	top := limitedTopology(t, c.ListenAddrs(), "{max_entries: 1000, overflow_topic: perkey.overflow}")
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	top.Settings.Tracing.Links = new(2)
	produceTraced(t, c.ListenAddrs(),
		tracedRecord("keys", `{"id":"a","ts":1000}`, 1),
		tracedRecord("keys", `{"id":"a","ts":2000}`, 2),
		tracedRecord("keys", `{"id":"flush","ts":100000000}`, 3),
	)
	r := start(t, top, "a", WithTracer(tracing.NewWithProvider(tp, top, 1)))
	waitConsumedAll(t, r.p.Metrics(), 6, time.Minute)
	r.stop(t)
	routeSpans := map[string]sdktrace.ReadOnlySpan{} // by parent trace id
	var window sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case tracing.SpanRoute:
			routeSpans[s.Parent().TraceID().String()] = s
		case tracing.SpanWindow:
			if window != nil && window.SpanContext().TraceID() == s.SpanContext().TraceID() {
				continue // an aborted and replayed batch made it again
			}
			window = s
		}
	}
	first, ok := routeSpans[fmt.Sprintf("%032x", 2)]
	if !ok || len(routeSpans) != 3 {
		t.Fatalf("route spans by parent trace: %v", routeSpans)
	}
	if got := first.Parent().SpanID().String(); got != fmt.Sprintf("%016x", 2) {
		t.Fatalf("route span parent span %s", got)
	}
	var routes []string
	for _, kv := range first.Attributes() {
		if kv.Key == tracing.AttrRoutes {
			routes = kv.Value.AsStringSlice()
		}
	}
	if len(routes) != 1 || routes[0] != "perkey" {
		t.Fatalf("route span routes %v", routes)
	}
	if window == nil || window.Parent().SpanID() != first.SpanContext().SpanID() || len(window.Links()) != 1 ||
		window.Links()[0].SpanContext.SpanID() != routeSpans[fmt.Sprintf("%032x", 3)].SpanContext().SpanID() {
		t.Fatalf("window span %v: want a child of %v linked to the second input's route span", window, first.SpanContext())
	}
	var got string
	for _, rr := range readCommitted(t, c.ListenAddrs(), "perkey.out") {
		if string(rr.Key) == "a@0" {
			got = wire.String(rr.Headers, wire.HeaderTraceparent)
		}
	}
	if want := fmt.Sprintf("00-%s-%s-01", window.SpanContext().TraceID(), window.SpanContext().SpanID()); got != want {
		t.Fatalf("result traceparent %q, want the window span's %q", got, want)
	}
}
