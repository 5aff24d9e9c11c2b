package registry

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// fakeRegistry is franz-go's srfake over HTTP, with a count of the
// schema-by-id requests it served.
type fakeRegistry struct {
	*srfake.Registry
	byID atomic.Int64
}

func newFake(t testing.TB) *fakeRegistry {
	t.Helper()
	f := &fakeRegistry{Registry: srfake.New()}
	f.Intercept(func(_ http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			f.byID.Add(1)
		}
		return false
	})
	t.Cleanup(f.Close)
	return f
}

func (f *fakeRegistry) client(t testing.TB) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(f.URL()))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func newRegistry(t testing.TB, c Client, opts ...Opt) *Registry {
	t.Helper()
	r, err := New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newDecoder(t testing.TB, r *Registry, f Format) *Decoder {
	t.Helper()
	d, err := NewDecoder(r, f)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// memClient is an in-memory Client (fuzzing, counting, blocking).
type memClient struct {
	mu      sync.Mutex
	byID    map[int]sr.Schema
	bySV    map[string]sr.SubjectSchema
	calls   atomic.Int64
	gate    chan struct{} // non-nil: SchemaByID waits for it to close
	failFor int           // the first failFor calls fail with a 503
}

func newMem() *memClient {
	return &memClient{byID: map[int]sr.Schema{}, bySV: map[string]sr.SubjectSchema{}}
}

func (m *memClient) add(id int, s sr.Schema) { m.mu.Lock(); m.byID[id] = s; m.mu.Unlock() }

func (m *memClient) addVersion(subject string, version int, s sr.Schema) {
	m.mu.Lock()
	m.bySV[subject+"/"+strconv.Itoa(version)] = sr.SubjectSchema{Subject: subject, Version: version, Schema: s}
	m.mu.Unlock()
}

func (m *memClient) SchemaByID(ctx context.Context, id int) (sr.Schema, error) {
	n := m.calls.Add(1)
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return sr.Schema{}, ctx.Err()
		}
	}
	if int(n) <= m.failFor {
		return sr.Schema{}, &sr.ResponseError{StatusCode: 503, Message: "unavailable"}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byID[id]
	if !ok {
		return sr.Schema{}, &sr.ResponseError{StatusCode: 404, ErrorCode: 40403, Message: "Schema not found"}
	}
	return s, nil
}

func (m *memClient) SchemaByVersion(_ context.Context, subject string, version int) (sr.SubjectSchema, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.bySV[subject+"/"+strconv.Itoa(version)]
	if !ok {
		return sr.SubjectSchema{}, &sr.ResponseError{StatusCode: 404, ErrorCode: 40401, Message: "Subject not found"}
	}
	return s, nil
}

// frame is a value in the Confluent wire format (franz-go's header).
// tb is what the helpers need of a test (testing.TB or *rapid.T).
type tb interface {
	Helper()
	Fatal(args ...any)
}

func frame(t tb, id int, index []int, payload []byte) []byte {
	t.Helper()
	b, err := header.AppendEncode(nil, id, index)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, payload...)
}

func avroEncode(t tb, schema string, v any) []byte {
	t.Helper()
	s, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := avro.Marshal(s, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordErr asserts err is a RecordError of reason and returns it.
func recordErr(t testing.TB, err error, reason string) *RecordError {
	t.Helper()
	var re *RecordError
	if !errors.As(err, &re) {
		t.Fatalf("want a RecordError %s, got %T %v", reason, err, err)
	}
	if re.Reason != reason {
		t.Fatalf("reason %q, want %q (%v)", re.Reason, reason, re)
	}
	if IsRetryable(err) {
		t.Fatalf("a record error must not be retryable: %v", err)
	}
	return re
}

type countHooks struct {
	mu      sync.Mutex
	lookups int
	hits    int
	errs    map[string]int
}

func (h *countHooks) OnLookup(hit bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lookups++
	if hit {
		h.hits++
	}
}

func (h *countHooks) OnError(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.errs == nil {
		h.errs = map[string]int{}
	}
	h.errs[kind]++
}
