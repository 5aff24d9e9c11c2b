package tracing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The batcher's sizes are the SDK batch span processor's defaults.
const (
	batchSize    = 512             // spans per export
	batchQueued  = 4               // full batches waiting for the exporter; more are dropped
	batchTimeout = 5 * time.Second // a partial batch waits at most this long
	exportLimit  = 30 * time.Second
)

// batcher is a span processor that exports in batches, as the SDK's
// batch span processor does, but wakes its exporting goroutine once per
// batch, not once per span: the SDK's sends every span on a channel to a
// parked goroutine, and on W1 waking it (a thread started, spinning for
// work, parked again) cost more CPU than making the span.
type batcher struct {
	exp     sdktrace.SpanExporter
	mu      sync.Mutex
	spans   []sdktrace.ReadOnlySpan // the batch being filled
	full    chan []sdktrace.ReadOnlySpan
	flush   chan chan error
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	dropped atomic.Int64 // spans dropped: the exporter fell behind
}

var _ sdktrace.SpanProcessor = (*batcher)(nil)

// newBatcher starts the exporting goroutine; Shutdown stops it.
func newBatcher(exp sdktrace.SpanExporter) *batcher {
	b := &batcher{exp: exp, spans: make([]sdktrace.ReadOnlySpan, 0, batchSize),
		full: make(chan []sdktrace.ReadOnlySpan, batchQueued), flush: make(chan chan error),
		stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

// NewProvider is the tracer provider New builds over exp (a benchmark
// builds the same over an exporter that drops what it gets).
func NewProvider(exp sdktrace.SpanExporter, o ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	o = append(o, sdktrace.WithSpanProcessor(newBatcher(exp)),
		// The router samples (Tracer.Start): what reaches the SDK is recorded.
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return sdktrace.NewTracerProvider(o...)
}

// OnStart implements sdktrace.SpanProcessor.
func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd adds s to the batch; a full batch goes to the exporting
// goroutine, or is dropped when batchQueued batches already wait.
func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	b.spans = append(b.spans, s)
	var batch []sdktrace.ReadOnlySpan
	if len(b.spans) >= batchSize {
		batch = b.take()
	}
	b.mu.Unlock()
	if batch == nil {
		return
	}
	select {
	case b.full <- batch:
	default:
		b.dropped.Add(int64(len(batch)))
		otel.Handle(fmt.Errorf("tracing: the OTLP exporter is behind; %d spans dropped", len(batch)))
	}
}

// take is the batch being filled, replaced by an empty one (b.mu held).
func (b *batcher) take() []sdktrace.ReadOnlySpan {
	batch := b.spans
	b.spans = make([]sdktrace.ReadOnlySpan, 0, batchSize)
	return batch
}

// partial is the batch being filled, nil when empty.
func (b *batcher) partial() []sdktrace.ReadOnlySpan {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.spans) == 0 {
		return nil
	}
	return b.take()
}

// run exports full batches as they come, the partial one every
// batchTimeout, on ForceFlush and on Shutdown.
func (b *batcher) run() {
	defer close(b.done)
	tick := time.NewTicker(batchTimeout)
	defer tick.Stop()
	for {
		select {
		case batch := <-b.full:
			// A failed export's spans are lost, as the SDK's are; said
			// through OpenTelemetry's error handler (logged), as it does.
			handle(b.export(batch))
		case <-tick.C:
			handle(b.export(b.partial()))
		case reply := <-b.flush:
			reply <- b.drain()
		case <-b.stop:
			_ = b.drain()
			return
		}
	}
}

// handle reports a failed export through OpenTelemetry's error handler.
func handle(err error) {
	if err != nil {
		otel.Handle(fmt.Errorf("tracing: export: %w", err))
	}
}

// drain exports the waiting batches and the partial one.
func (b *batcher) drain() error {
	var errs []error
	for {
		select {
		case batch := <-b.full:
			errs = append(errs, b.export(batch))
		default:
			return errors.Join(append(errs, b.export(b.partial()))...)
		}
	}
}

func (b *batcher) export(batch []sdktrace.ReadOnlySpan) error {
	if len(batch) == 0 {
		return nil
	}
	// The spans are exported whatever happens to the caller's context
	// (there is none here); exportLimit bounds a stuck collector.
	ctx, cancel := context.WithTimeout(context.Background(), exportLimit)
	defer cancel()
	return b.exp.ExportSpans(ctx, batch)
}

// ForceFlush implements sdktrace.SpanProcessor: it exports what was
// ended before it, waiting at most until ctx ends.
func (b *batcher) ForceFlush(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case b.flush <- reply:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown implements sdktrace.SpanProcessor: it exports what is left
// and shuts the exporter down, waiting at most until ctx ends.
func (b *batcher) Shutdown(ctx context.Context) error {
	b.once.Do(func() { close(b.stop) })
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.exp.Shutdown(ctx)
}
