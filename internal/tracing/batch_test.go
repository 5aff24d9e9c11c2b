package tracing

import (
	"context"
	"slices"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// countingExporter keeps how many spans each export had.
type countingExporter struct {
	mu      sync.Mutex
	exports []int
	stopped bool
}

func (e *countingExporter) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exports = append(e.exports, len(s))
	return nil
}

func (e *countingExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopped = true
	return nil
}

func (e *countingExporter) got() ([]int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.exports...), e.stopped
}

// TestBatcher: spans are exported in batches of batchSize, the partial
// one on ForceFlush, what is left on Shutdown, then the exporter stops.
func TestBatcher(t *testing.T) {
	exp := &countingExporter{}
	tp := NewProvider(exp)
	tr := tp.Tracer("test")
	end := func(n int) {
		for range n {
			_, s := tr.Start(t.Context(), "s")
			s.End()
		}
	}
	end(2*batchSize + 3)
	if err := tp.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, _ := exp.got()
	if want := []int{batchSize, batchSize, 3}; !slices.Equal(got, want) {
		t.Fatalf("exports after ForceFlush: %v, want %v", got, want)
	}
	end(5)
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, stopped := exp.got()
	if want := []int{batchSize, batchSize, 3, 5}; !slices.Equal(got, want) || !stopped {
		t.Fatalf("exports after Shutdown: %v (exporter stopped %v), want %v", got, stopped, want)
	}
}
