package tracing

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// Span names and attribute keys (docs/tracing.md lists them).
const (
	SpanRoute    = "sidestream.route"
	SpanWindow   = "sidestream.window"
	SpanAssembly = "sidestream.assembly"
	SpanLate     = "sidestream.late"

	AttrRoutes      = "sidestream.routes"
	AttrTopics      = "sidestream.topics"
	AttrDirtyReason = "sidestream.dirty.reason"
	AttrDropped     = "sidestream.dropped"
	AttrRoute       = "sidestream.route"
	AttrLate        = "sidestream.late"
	AttrApplication = "sidestream.application_id"
	AttrInputs      = "sidestream.inputs_linked"
)

// instrumentation is the tracer's name (the instrumentation scope).
const instrumentation = "github.com/sidestream/sidestream"

// Tracer makes the router's spans. A nil *Tracer is tracing off: every
// method is a no-op.
type Tracer struct {
	tr       trace.Tracer
	bound    uint64 // a trace id's low 63 bits below it: sampled
	app      string
	dirty    string            // the dirty route's topic
	routes   map[string]string // output topic -> route name
	shutdown func(context.Context) error
}

// New builds the tracer of a plan: nil when tracing.spans is off, else
// spans exported over OTLP (tracing.endpoint, tracing.protocol) in
// batches. Shutdown flushes them.
func New(ctx context.Context, p *plan.Plan) (*Tracer, error) {
	s := p.Settings.Tracing
	if !s.Spans {
		return nil, nil
	}
	exp, err := exporter(ctx, s.Protocol, s.Endpoint, s.Insecure)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "sidestream"),
		attribute.String(AttrApplication, p.Settings.ApplicationID)))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := NewProvider(exp, sdktrace.WithResource(res))
	t := NewWithProvider(tp, p, s.SampleRatioOrDefault())
	t.shutdown = tp.Shutdown
	return t, nil
}

func exporter(ctx context.Context, protocol, endpoint string, insecure bool) (*otlptrace.Exporter, error) {
	if protocol == "http" {
		var o []otlptracehttp.Option
		if endpoint != "" {
			o = append(o, otlptracehttp.WithEndpointURL(endpoint))
		}
		if insecure {
			o = append(o, otlptracehttp.WithInsecure())
		}
		return otlptracehttp.New(ctx, o...)
	}
	var o []otlptracegrpc.Option
	if endpoint != "" {
		o = append(o, otlptracegrpc.WithEndpoint(endpoint))
	}
	if insecure {
		o = append(o, otlptracegrpc.WithInsecure())
	}
	return otlptracegrpc.New(ctx, o...)
}

// NewWithProvider is a tracer over tp sampling ratio of the records (a
// test hands it the SDK's span recorder).
func NewWithProvider(tp trace.TracerProvider, p *plan.Plan, ratio float64) *Tracer {
	t := &Tracer{tr: tp.Tracer(instrumentation), app: p.Settings.ApplicationID, dirty: p.Dirty.Topic,
		routes: map[string]string{}, bound: ratioBound(ratio)}
	for _, r := range p.Routes {
		t.routes[r.Topic] = r.Name
		if r.Window != nil {
			t.routes[r.Window.RepartitionTopic] = r.Name
		}
		if r.Assembly != nil {
			t.routes[r.Assembly.RepartitionTopic] = r.Name
		}
	}
	return t
}

// ratioBound is OpenTelemetry's TraceIDRatioBased bound: a trace id
// whose last 8 bytes, shifted right by one, are below it is sampled; so
// every service that samples by ratio keeps the same traces.
func ratioBound(ratio float64) uint64 {
	switch {
	case ratio >= 1:
		return 1 << 63
	case ratio <= 0:
		return 0
	}
	return uint64(ratio * (1 << 63))
}

// Shutdown flushes and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// Stop is Shutdown once ctx has ended: it flushes for at most 5 s.
func (t *Tracer) Stop(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return t.Shutdown(sctx)
}

// sampled decides by the trace id, or at random without a context.
func (t *Tracer) sampled(tc wire.TraceContext, has bool) bool {
	if t.bound == 0 {
		return false
	}
	if !has {
		return rand.Uint64()>>1 < t.bound
	}
	return binary.BigEndian.Uint64(tc.TraceID[8:])>>1 < t.bound
}

// Pending is an input record's sampling decision (Start), kept by the
// caller until its outputs are known (End). The zero value is not
// sampled.
type Pending struct {
	start     time.Time
	parent    wire.TraceContext
	hasParent bool
	sampled   bool
}

// Sampled reports whether End will make a span.
func (p Pending) Sampled() bool { return p.sampled }

// Start decides whether input record r gets a span, reading its
// traceparent. It allocates nothing.
func (t *Tracer) Start(r *kgo.Record) Pending {
	if t == nil {
		return Pending{}
	}
	tc, has := wire.Traceparent(r.Headers)
	if !t.sampled(tc, has) {
		return Pending{}
	}
	return Pending{start: time.Now(), parent: tc, hasParent: has, sampled: true}
}

// spanContext is tc as OpenTelemetry's remote span context.
func spanContext(tc wire.TraceContext) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tc.TraceID, SpanID: tc.SpanID,
		TraceFlags: trace.TraceFlags(tc.Flags), Remote: true})
}

// fromSpan is the context a record written under span carries.
func fromSpan(sc trace.SpanContext) wire.TraceContext {
	return wire.TraceContext{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Flags: byte(sc.TraceFlags())}
}

// parentContext is a context holding parent as the remote parent; the
// context carries nothing else (no deadline: a span's end never waits).
func parentContext(parent wire.TraceContext, has bool) context.Context {
	ctx := context.Background()
	if has {
		ctx = trace.ContextWithRemoteSpanContext(ctx, spanContext(parent))
	}
	return ctx
}

// End makes the span of a sampled input record (p from Start) with its
// outcome: the routes and topics of outs, the dirty reason, or dropped.
// The route outputs (not the dirty record, which keeps the input's
// headers as they came) carry the span's traceparent instead of the
// input's, so what reads them continues from the router's span.
func (t *Tracer) End(p Pending, r *kgo.Record, outs []*kgo.Record) {
	if t == nil || !p.sampled {
		return
	}
	_, span := t.tr.Start(parentContext(p.parent, p.hasParent), SpanRoute,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(p.start),
		trace.WithAttributes(
			attribute.String("messaging.system", "kafka"),
			attribute.String("messaging.source.name", r.Topic),
			attribute.String("messaging.destination.partition.id", strconv.Itoa(int(r.Partition))),
			attribute.Int64("messaging.kafka.offset", r.Offset),
			attribute.String(AttrApplication, t.app)))
	var routes, topics []string
	tp := wire.AppendTraceparent(make([]byte, 0, wire.TraceparentLen), fromSpan(span.SpanContext()))
	for _, o := range outs {
		if o.Topic == t.dirty {
			span.SetAttributes(attribute.String(AttrDirtyReason, wire.String(o.Headers, wire.HeaderReason)))
			continue
		}
		topics = append(topics, o.Topic)
		if name, ok := t.routes[o.Topic]; ok {
			routes = append(routes, name)
		}
		o.Headers = withTraceparent(o.Headers, tp)
	}
	if len(outs) == 0 {
		span.SetAttributes(attribute.Bool(AttrDropped, true))
	}
	span.SetAttributes(attribute.StringSlice(AttrRoutes, routes), attribute.StringSlice(AttrTopics, topics))
	span.End()
}

// withTraceparent is hs with its traceparent (all of them) replaced by
// one of value tp, in a slice of its own: the input's slice is shared by
// the outputs of every route.
func withTraceparent(hs []kgo.RecordHeader, tp []byte) []kgo.RecordHeader {
	out := make([]kgo.RecordHeader, 0, len(hs)+1)
	for _, h := range hs {
		if h.Key != wire.HeaderTraceparent {
			out = append(out, h)
		}
	}
	return append(out, kgo.RecordHeader{Key: wire.HeaderTraceparent, Value: tp})
}

// Continue implements stagetwo.Tracer: a window result or an assembly
// whose first input's trace is sampled gets a span, a child of that
// input's context linked to the other inputs' (binary contexts, as the
// state keeps them), and carries the span's context; otherwise it carries
// parent.
func (t *Tracer) Continue(kind, route, topic string, parent wire.TraceContext, links [][]byte) wire.TraceContext {
	if t == nil || !t.sampled(parent, true) {
		return parent
	}
	ls := make([]trace.Link, 0, len(links))
	for _, b := range links {
		if tc, ok := wire.TraceContextFromBinary(b); ok {
			ls = append(ls, trace.Link{SpanContext: spanContext(tc)})
		}
	}
	name := SpanWindow
	if kind == "assembly" {
		name = SpanAssembly
	}
	_, span := t.tr.Start(parentContext(parent, true), name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(ls...),
		trace.WithAttributes(attribute.String(AttrRoute, route), attribute.String("messaging.destination.name", topic),
			attribute.Int(AttrInputs, 1+len(ls)), attribute.String(AttrApplication, t.app)))
	span.End()
	return fromSpan(span.SpanContext())
}

// Late implements stagetwo.Tracer: a late record whose trace is sampled
// gets a span, a child of its context (the stage-one span's when that
// was sampled too).
func (t *Tracer) Late(route string, r *kgo.Record) {
	if t == nil {
		return
	}
	tc, has := wire.Traceparent(r.Headers)
	if !t.sampled(tc, has) {
		return
	}
	_, span := t.tr.Start(parentContext(tc, has), SpanLate, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String(AttrRoute, route), attribute.Bool(AttrLate, true),
			attribute.String("messaging.destination.name", r.Topic), attribute.String(AttrApplication, t.app)))
	span.End()
}
