package tracing

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

const topology = `application_id: traced
inputs: [{topic: in}]
event_time: {field: ts}
routing: {default: drop}
routes:
  - name: errors
    topic: errors.out
    when: level == "ERROR"
  - name: counts
    topic: counts.out
    when: "true"
    window:
      type: tumbling
      size: 1m
      group_by: svc
      late_topic: counts.late
      aggregates: [{name: n, fn: count}]
dirty: {topic: in.dirty}
`

func testPlan(t testing.TB) *plan.Plan {
	t.Helper()
	c, err := config.Load("traced.yaml", []byte(topology))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compile(c, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// recorded is a tracer over the SDK's span recorder.
func recorded(t testing.TB, ratio float64) (*Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return NewWithProvider(tp, testPlan(t), ratio), rec
}

const parentTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestRouteSpan: a sampled input's span is a child of its traceparent,
// carries the route decision, and the route outputs (not the dirty
// record) carry the span's context.
func TestRouteSpan(t *testing.T) {
	tr, rec := recorded(t, 1)
	in := &kgo.Record{Topic: "in", Partition: 2, Offset: 41, Headers: []kgo.RecordHeader{{Key: "x", Value: []byte("y")}, {Key: wire.HeaderTraceparent, Value: []byte(parentTP)}}}
	shared := in.Headers
	outs := []*kgo.Record{
		{Topic: "errors.out", Headers: in.Headers},
		{Topic: "traced-counts-repartition", Headers: in.Headers},
	}
	p := tr.Start(in)
	if !p.Sampled() {
		t.Fatal("ratio 1 did not sample")
	}
	tr.End(p, in, outs)
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	parent, _ := wire.ParseTraceparent([]byte(parentTP))
	if s.Name() != SpanRoute || s.Parent().TraceID() != parent.TraceID || s.Parent().SpanID() != parent.SpanID || !s.Parent().IsRemote() {
		t.Fatalf("span %q parent %v, want a child of %s", s.Name(), s.Parent(), parentTP)
	}
	a := attrs(s)
	if got := a[AttrRoutes].AsStringSlice(); !slices.Equal(got, []string{"errors", "counts"}) {
		t.Errorf("routes %v", got)
	}
	if got := a[AttrTopics].AsStringSlice(); !slices.Equal(got, []string{"errors.out", "traced-counts-repartition"}) {
		t.Errorf("topics %v", got)
	}
	if a["messaging.source.name"].AsString() != "in" || a["messaging.kafka.offset"].AsInt64() != 41 {
		t.Errorf("attributes %v", a)
	}
	want := string(wire.AppendTraceparent(nil, fromSpan(s.SpanContext())))
	for _, o := range outs {
		if got := wire.String(o.Headers, wire.HeaderTraceparent); got != want || wire.String(o.Headers, "x") != "y" {
			t.Errorf("output %s headers %v, want traceparent %s", o.Topic, o.Headers, want)
		}
	}
	if string(shared[1].Value) != parentTP {
		t.Error("the input's own headers were written to")
	}
}

func TestDirtyAndDroppedSpans(t *testing.T) {
	tr, rec := recorded(t, 1)
	in := &kgo.Record{Topic: "in"} // no context: a new trace
	dirty := &kgo.Record{Topic: "in.dirty", Headers: []kgo.RecordHeader{{Key: wire.HeaderReason, Value: []byte("invalid_json")}}}
	tr.End(tr.Start(in), in, []*kgo.Record{dirty})
	tr.End(tr.Start(in), in, nil)
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	if spans[0].Parent().IsValid() {
		t.Error("a record without a context got a parent")
	}
	if got := attrs(spans[0])[AttrDirtyReason].AsString(); got != "invalid_json" {
		t.Errorf("dirty reason %q", got)
	}
	if len(dirty.Headers) != 1 {
		t.Errorf("the dirty record's headers changed: %v", dirty.Headers)
	}
	if !attrs(spans[1])[AttrDropped].AsBool() {
		t.Error("dropped record's span not marked")
	}
}

// TestContinueSpan: a window result's span is a child of its first
// input's context, linked to the others, and the result carries it.
func TestContinueSpan(t *testing.T) {
	tr, rec := recorded(t, 1)
	parent, _ := wire.ParseTraceparent([]byte(parentTP))
	other := wire.TraceContext{TraceID: [16]byte{1}, SpanID: [8]byte{2}, Flags: 1}
	got := tr.Continue("window", "counts", "counts.out", parent, [][]byte{other.AppendBinary(nil)})
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Name() != SpanWindow || s.Parent().SpanID() != parent.SpanID || got != fromSpan(s.SpanContext()) || got.TraceID != parent.TraceID {
		t.Fatalf("span %q parent %v, carried %+v", s.Name(), s.Parent(), got)
	}
	if len(s.Links()) != 1 || s.Links()[0].SpanContext.TraceID() != trace.TraceID(other.TraceID) {
		t.Fatalf("links %v", s.Links())
	}
	if a := attrs(s); a[AttrRoute].AsString() != "counts" || a[AttrInputs].AsInt64() != 2 {
		t.Fatalf("attributes %v", a)
	}
	late := &kgo.Record{Topic: "counts.late", Headers: []kgo.RecordHeader{{Key: wire.HeaderTraceparent, Value: []byte(parentTP)}}}
	tr.Late("counts", late)
	if spans = rec.Ended(); len(spans) != 2 || spans[1].Name() != SpanLate || !attrs(spans[1])[AttrLate].AsBool() {
		t.Fatalf("late span: %v", spans)
	}
}

// TestSamplingShare: the share of records sampled is the ratio, decided
// by the trace id as OpenTelemetry's TraceIDRatioBased decides it, and
// at random without a context.
func TestSamplingShare(t *testing.T) {
	const n = 200_000
	for _, ratio := range []float64{0, 0.01, 0.25, 1} {
		t.Run(fmt.Sprint(ratio), func(t *testing.T) {
			tr, _ := recorded(t, ratio)
			otel := sdktrace.TraceIDRatioBased(ratio)
			rng := rand.New(rand.NewPCG(1, uint64(ratio*1000)))
			withCtx, without := 0, 0
			for range n {
				var tc wire.TraceContext
				binary.BigEndian.PutUint64(tc.TraceID[:8], rng.Uint64())
				binary.BigEndian.PutUint64(tc.TraceID[8:], rng.Uint64())
				tc.SpanID[0] = 1
				got := tr.sampled(tc, true)
				want := otel.ShouldSample(sdktrace.SamplingParameters{TraceID: tc.TraceID}).Decision == sdktrace.RecordAndSample
				if got != want {
					t.Fatalf("trace %x: sampled %v, OpenTelemetry's ratio sampler %v", tc.TraceID, got, want)
				}
				if got {
					withCtx++
				}
				if tr.sampled(wire.TraceContext{}, false) {
					without++
				}
			}
			// Binomial: 5 standard deviations.
			tol := 5*math.Sqrt(n*ratio*(1-ratio)) + 1
			for what, k := range map[string]int{"with a context": withCtx, "without": without} {
				if math.Abs(float64(k)-n*ratio) > tol {
					t.Errorf("%s: %d of %d sampled, want %v ± %v", what, k, n, n*ratio, tol)
				}
			}
		})
	}
}

// TestOffAllocatesNothing: with spans off (a nil tracer) and for a
// record that is not sampled, the record path allocates nothing.
func TestOffAllocatesNothing(t *testing.T) {
	in := &kgo.Record{Topic: "in", Headers: []kgo.RecordHeader{{Key: wire.HeaderTraceparent, Value: []byte(parentTP)}}}
	outs := []*kgo.Record{{Topic: "errors.out", Headers: in.Headers}}
	parent, _ := wire.ParseTraceparent([]byte(parentTP))
	links := [][]byte{parent.AppendBinary(nil)}
	var off *Tracer
	unsampled, _ := recorded(t, 0.01) // parentTP's trace id is not in the 1%
	if unsampled.sampled(parent, true) {
		t.Fatal("the test's trace is sampled at 1%")
	}
	for name, tr := range map[string]*Tracer{"off": off, "not sampled": unsampled} {
		n := testing.AllocsPerRun(1000, func() {
			p := tr.Start(in)
			if p.Sampled() {
				tr.End(p, in, outs)
			}
			_ = tr.Continue("window", "counts", "counts.out", parent, links)
		})
		if n != 0 {
			t.Errorf("%s: %v allocations per record", name, n)
		}
	}
	n := testing.AllocsPerRun(1000, func() { off.Late("counts", in) })
	if n != 0 {
		t.Errorf("off: Late allocates %v", n)
	}
}
