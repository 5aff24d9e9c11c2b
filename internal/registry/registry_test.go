package registry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/wire"
)

const userV1 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"}]}`

var _ Hooks = (*metrics.RegistryMetrics)(nil)

func TestNotFramed(t *testing.T) {
	d := newDecoder(t, newRegistry(t, newMem()), Avro)
	for name, value := range map[string][]byte{
		"nil": nil, "empty": {}, "json": []byte(`{"id":1}`), "wrong magic": {1, 0, 0, 0, 1, 2}, "short": {0, 0, 0, 1},
	} {
		_, err := d.Decode(context.Background(), value)
		re := recordErr(t, err, wire.ReasonNotRegistryFramed)
		if re.SchemaID != -1 || re.Stage != wire.StageDecode || !strings.Contains(re.Error(), "magic byte 0") {
			t.Errorf("%s: %+v %v", name, re, re)
		}
	}
}

// TestUnknownID: a 404 (40403) is the record's fault, permanent, and
// remembered for the unknown TTL.
func TestUnknownID(t *testing.T) {
	f := newFake(t)
	h := &countHooks{}
	r := newRegistry(t, f.client(t), WithHooks(h))
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	d := newDecoder(t, r, Avro)
	for range 3 {
		_, err := d.Decode(context.Background(), frame(t, 404, nil, []byte{2}))
		re := recordErr(t, err, wire.ReasonUnknownSchemaID)
		if re.SchemaID != 404 || !strings.Contains(re.Error(), "schema id 404") {
			t.Fatalf("%+v", re)
		}
	}
	if n := f.byID.Load(); n != 1 {
		t.Fatalf("%d registry requests for one unknown id within the TTL, want 1", n)
	}
	now = now.Add(31 * time.Second)
	f.SeedSchema("late-value", 1, 404, sr.Schema{Schema: userV1, Type: sr.TypeAvro})
	if _, err := d.Decode(context.Background(), frame(t, 404, nil, avroEncode(t, userV1, map[string]any{"id": int64(1)}))); err != nil {
		t.Fatalf("after the TTL the id is asked again: %v", err)
	}
	if h.errs[ErrorUnknownID] != 3 || h.lookups != 4 || h.hits != 2 {
		t.Fatalf("hooks %+v", h)
	}
}

// TestUnknownTTLConfigured: the TTL given with WithUnknownTTL, not the
// default, decides when an unknown id is asked again; 0 asks every time.
func TestUnknownTTLConfigured(t *testing.T) {
	for _, c := range []struct {
		ttl   time.Duration
		steps []time.Duration // clock moves before each lookup after the first
		want  []int64         // registry requests after each lookup
	}{
		// 5s: still remembered just before, asked again at the TTL, then
		// remembered for another 5s from that answer.
		{5 * time.Second, []time.Duration{4999 * time.Millisecond, time.Millisecond, 4 * time.Second, time.Second}, []int64{1, 1, 2, 2, 3}},
		// 2m: the default's 30s does not expire it.
		{2 * time.Minute, []time.Duration{31 * time.Second, 88 * time.Second, time.Second}, []int64{1, 1, 1, 2}},
		{0, []time.Duration{0, 0, time.Millisecond}, []int64{1, 2, 3, 4}},
	} {
		t.Run(c.ttl.String(), func(t *testing.T) {
			f := newFake(t)
			r := newRegistry(t, f.client(t), WithUnknownTTL(c.ttl))
			now := time.Unix(1000, 0)
			r.now = func() time.Time { return now }
			for i, want := range c.want {
				if i > 0 {
					now = now.Add(c.steps[i-1])
				}
				_, err := r.Lookup(context.Background(), 404)
				recordErr(t, err, wire.ReasonUnknownSchemaID)
				if n := f.byID.Load(); n != want {
					t.Fatalf("lookup %d at +%s: %d registry requests, want %d", i, now.Sub(time.Unix(1000, 0)), n, want)
				}
			}
		})
	}
}

// TestRegistry500Then200: a 5xx is retryable (its own type, nothing
// cached), then the same record decodes.
func TestRegistry500Then200(t *testing.T) {
	f := newFake(t)
	f.SeedSchema("u-value", 1, 5, sr.Schema{Schema: userV1, Type: sr.TypeAvro})
	var failing atomic.Bool
	failing.Store(true)
	f.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error_code":50001,"message":"store error"}`))
			return true
		}
		return false
	})
	reg := metrics.NewRegistryMetrics(prometheus.NewRegistry())
	d := newDecoder(t, newRegistry(t, f.client(t), WithHooks(reg)), Avro)
	rec := frame(t, 5, nil, avroEncode(t, userV1, map[string]any{"id": int64(77)}))
	_, err := d.Decode(context.Background(), rec)
	var u *UnavailableError
	if !errors.As(err, &u) || !IsRetryable(err) || u.SchemaID != 5 {
		t.Fatalf("want a retryable UnavailableError for id 5, got %T %v", err, err)
	}
	var re *RecordError
	if errors.As(err, &re) {
		t.Fatalf("a 5xx must not be a record error: %v", err)
	}
	failing.Store(false)
	v, err := d.Decode(context.Background(), rec)
	if err != nil || v.Fields["id"] != 77 {
		t.Fatalf("after recovery: %v %v", v, err)
	}
	if got := testutil.ToFloat64(reg.Errors.WithLabelValues(ErrorUnavailable)); got != 1 {
		t.Errorf("unavailable errors %v, want 1", got)
	}
	if l, h := testutil.ToFloat64(reg.Lookups), testutil.ToFloat64(reg.CacheHits); l != 2 || h != 0 {
		t.Errorf("lookups %v hits %v, want 2, 0", l, h)
	}
}

func TestUnreachableAndTimeout(t *testing.T) {
	cl, err := sr.NewClient(sr.URLs("http://127.0.0.1:1")) // nothing listens
	if err != nil {
		t.Fatal(err)
	}
	d := newDecoder(t, newRegistry(t, cl), Avro)
	if _, err := d.Decode(context.Background(), frame(t, 1, nil, []byte{2})); !IsRetryable(err) {
		t.Fatalf("unreachable registry: %T %v, want retryable", err, err)
	}
	m := newMem()
	m.gate = make(chan struct{}) // never answers
	d = newDecoder(t, newRegistry(t, m, WithFetchTimeout(50*time.Millisecond)), Avro)
	_, err = d.Decode(context.Background(), frame(t, 1, nil, []byte{2}))
	if !IsRetryable(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: %T %v, want retryable deadline", err, err)
	}
	// The caller's own cancel is neither a record error nor retryable.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = d.Decode(ctx, frame(t, 2, nil, []byte{2}))
	var re *RecordError
	if !errors.Is(err, context.Canceled) || errors.As(err, &re) || IsRetryable(err) {
		t.Fatalf("cancelled: %T %v", err, err)
	}
}

// TestOneFetchPerID: concurrent lookups of one id share one fetch.
func TestOneFetchPerID(t *testing.T) {
	m := newMem()
	m.add(9, sr.Schema{Schema: userV1, Type: sr.TypeAvro})
	m.gate = make(chan struct{})
	h := &countHooks{}
	r := newRegistry(t, m, WithHooks(h))
	d := newDecoder(t, r, Avro)
	rec := frame(t, 9, nil, avroEncode(t, userV1, map[string]any{"id": int64(1)}))
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := d.Decode(context.Background(), rec)
			errs <- err
		})
	}
	// Wait until the first fetch is in the client, then release it.
	deadline := time.Now().Add(30 * time.Second)
	for m.calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(m.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if c := m.calls.Load(); c != 1 {
		t.Fatalf("%d fetches for one id under %d concurrent lookups, want 1", c, n)
	}
	if h.lookups != n {
		t.Fatalf("%d lookups, want %d", h.lookups, n)
	}
}

func TestSchemaProblems(t *testing.T) {
	m := newMem()
	m.add(1, sr.Schema{Schema: `{"type":"record","name":"R","fields":[{"name":"x","type":"nope"}]}`, Type: sr.TypeAvro})
	m.add(2, sr.Schema{Schema: `"string"`, Type: sr.TypeAvro})
	m.add(3, sr.Schema{Schema: `syntax = "proto3"; message M { int64 a = 1; }`, Type: sr.TypeProtobuf})
	m.add(4, sr.Schema{Schema: userV1, Type: sr.TypeAvro, References: []sr.SchemaReference{{Name: "X", Subject: "gone", Version: 1}}})
	h := &countHooks{}
	r := newRegistry(t, m, WithHooks(h))
	d := newDecoder(t, r, Avro)
	for id, want := range map[int]string{1: "does not parse", 2: "not a record", 3: "PROTOBUF schema", 4: `subject "gone" version 1`} {
		for range 2 {
			_, err := d.Decode(context.Background(), frame(t, id, nil, []byte{2}))
			re := recordErr(t, err, wire.ReasonAvroDecode)
			if !strings.Contains(re.Error(), want) {
				t.Errorf("id %d: %v, want it to say %q", id, re, want)
			}
		}
	}
	if c := m.calls.Load(); c != 4 {
		t.Errorf("%d fetches, want 4 (a bad schema is cached)", c)
	}
	if h.errs[ErrorBadSchema] != 3 {
		t.Errorf("bad_schema errors %d, want 3", h.errs[ErrorBadSchema])
	}
	if _, err := NewDecoder(r, "xml"); err == nil {
		t.Error("format xml accepted")
	}
	if _, err := New(nil); err == nil {
		t.Error("nil client accepted")
	}
}

func TestEventTimeRules(t *testing.T) {
	v := &Value{Fields: map[string]any{
		"ms": 1790000000123, "s": 1790000000.123, "neg": -1.5, "rfc": "2026-11-30T17:25:57.5Z", "bad": "x",
		"meta": map[string]any{"ts": 1790000000, "arr": []any{5}}, "nan": "NaN", "big": 1e300, "null": nil,
	}}
	for _, c := range []struct {
		field, format string
		want          int64
		reason        string
	}{
		{"ms", TimeEpochMillis, 1790000000123, ""},
		{"s", TimeEpochSecs, 1790000000123, ""},
		{"neg", TimeEpochSecs, -1500, ""},
		{"neg", TimeEpochMillis, -2, ""},
		{"rfc", TimeRFC3339, 1796059557500, ""},
		{"meta.ts", TimeEpochSecs, 1790000000000, ""},
		{"meta.arr.0", TimeEpochMillis, 5, ""},
		{"bad", TimeRFC3339, 0, wire.ReasonBadTime},
		{"bad", TimeEpochMillis, 0, wire.ReasonBadTime},
		{"big", TimeEpochMillis, 0, wire.ReasonBadTime},
		{"null", TimeEpochMillis, 0, wire.ReasonMissingTime},
		{"missing.x", TimeEpochMillis, 0, wire.ReasonMissingTime},
		{"ms", "kafka", 0, wire.ReasonBadTime},
	} {
		got, re := v.EventTime(c.field, c.format)
		switch {
		case c.reason == "" && (re != nil || got != c.want):
			t.Errorf("%s %s = %d, %v; want %d", c.field, c.format, got, re, c.want)
		case c.reason != "" && (re == nil || re.Reason != c.reason || re.Stage != wire.StageEventTime):
			t.Errorf("%s %s = %d, %v; want %s", c.field, c.format, got, re, c.reason)
		}
	}
}

// TestUnknownIDsBounded: a stream of distinct bogus ids keeps at most
// maxUnknown of them remembered.
func TestUnknownIDsBounded(t *testing.T) {
	r := newRegistry(t, newMem())
	for id := range maxUnknown + 10 {
		_, err := r.Lookup(context.Background(), id)
		recordErr(t, err, wire.ReasonUnknownSchemaID)
	}
	r.mu.RLock()
	n := len(r.unknown)
	r.mu.RUnlock()
	if n > maxUnknown {
		t.Fatalf("%d unknown ids remembered, bound %d", n, maxUnknown)
	}
}
