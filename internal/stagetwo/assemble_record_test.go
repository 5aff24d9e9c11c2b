package stagetwo

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/wire"
)

// referenceAssemblyRecord is assemblyRecord as first written (a fresh
// slice per header value): the record assemblyRecord must still build.
func referenceAssemblyRecord(e *recordRunner, ar *assemblyRoute, a *assembly.Assembly, ts time.Time, tally *metrics.Tally) *kgo.Record {
	name := ar.rt.Name
	names := make([]string, len(a.Parts))
	for i, p := range a.Parts {
		names[i] = p.Name
	}
	topic, result := ar.rt.Topic, metrics.ResultCompleted
	if !a.Complete {
		topic, result = ar.rt.Assembly.Spec.IncompleteTopic, metrics.ResultExpired
	}
	if a.Evicted {
		result = metrics.ResultEvicted
	}
	tally.Assemblies[[2]string{name, result}]++
	tally.AssemblyObs = append(tally.AssemblyObs, metrics.AssemblyObs{Route: name, Parts: len(a.Parts), Complete: a.Complete,
		Seconds: float64(a.Done-a.First) / 1000})
	return e.fit(ar, &kgo.Record{Topic: topic, Key: []byte(a.ID), Value: a.Value, Timestamp: ts, Headers: []kgo.RecordHeader{
		{Key: wire.HeaderAssemblyRoute, Value: []byte(name)},
		{Key: wire.HeaderComplete, Value: []byte(strconv.FormatBool(a.Complete))},
		{Key: wire.HeaderAssemblyParts, Value: []byte(strings.Join(names, ","))},
		{Key: wire.HeaderMissing, Value: []byte(strings.Join(a.Missing, ","))},
		{Key: wire.HeaderAssemblyEvicted, Value: []byte(strconv.FormatBool(a.Evicted))},
	}}, tally)
}

// TestAssemblyRecordMatchesReference: for any emitted assembly (held and
// missing parts, complete, expired or evicted, any ID, too large or not)
// assemblyRecord builds the reference's record and tally, down to an
// empty header value being empty and not null.
func TestAssemblyRecordMatchesReference(t *testing.T) {
	top := exampleAt(t, "../../examples/order-payment-shipment.yaml", []string{"127.0.0.1:9092"})
	top.Dirty.MaxRecordBytes, top.Dirty.TruncateTo = 2048, 512
	e := newEngine(top)
	as, err := newAssemblyStage(top)
	if err != nil {
		t.Fatal(err)
	}
	ar := as.routes[top.Assemblies()[0].Assembly.RepartitionTopic]
	rapid.Check(t, func(rt *rapid.T) {
		a := &assembly.Assembly{
			ID:       rapid.StringMatching(`[a-z0-9<"\\\x00é-]{1,12}`).Draw(rt, "id"),
			Complete: rapid.Bool().Draw(rt, "complete"),
			Evicted:  rapid.Bool().Draw(rt, "evicted"),
			First:    rapid.Int64Range(0, 1e6).Draw(rt, "first"),
			Done:     rapid.Int64Range(1e6, 2e6).Draw(rt, "done"),
			Value:    []byte(`{"v":"` + strings.Repeat("x", rapid.IntRange(0, 3000).Draw(rt, "size")) + `"}`),
		}
		for _, p := range ar.spec.Parts {
			if rapid.Bool().Draw(rt, "held "+p) {
				a.Parts = append(a.Parts, assembly.Part{Name: p, Value: []byte(`{}`)})
			} else if rapid.Bool().Draw(rt, "missing "+p) {
				a.Missing = append(a.Missing, p)
			}
		}
		ts := time.UnixMilli(a.Done)
		gotTally, wantTally := metrics.NewTally(), metrics.NewTally()
		got := e.assemblyRecord(ar, a, ts, gotTally)
		want := referenceAssemblyRecord(e, ar, a, ts, wantTally)
		if !sameRecord(got, want) {
			rt.Fatalf("record\n got %+v\nwant %+v", got, want)
		}
		if !reflect.DeepEqual(gotTally, wantTally) {
			rt.Fatalf("tally\n got %+v\nwant %+v", gotTally, wantTally)
		}
	})
}

func sameRecord(a, b *kgo.Record) bool {
	same := func(x, y []byte) bool { return bytes.Equal(x, y) && (x == nil) == (y == nil) }
	if a.Topic != b.Topic || !same(a.Key, b.Key) || !same(a.Value, b.Value) || !a.Timestamp.Equal(b.Timestamp) || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !same(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}

// TestPartName: the part header read as the spec's string, the first of
// several, "" when absent or empty, and an unknown name as it is.
func TestPartName(t *testing.T) {
	parts := []string{"error", "warn"}
	for _, c := range []struct {
		hs   []kgo.RecordHeader
		want string
	}{
		{nil, ""},
		{[]kgo.RecordHeader{{Key: wire.HeaderPart, Value: []byte("warn")}}, "warn"},
		{[]kgo.RecordHeader{{Key: "x", Value: []byte("error")}, {Key: wire.HeaderPart, Value: []byte("error")}, {Key: wire.HeaderPart, Value: []byte("warn")}}, "error"},
		{[]kgo.RecordHeader{{Key: wire.HeaderPart, Value: nil}}, ""},
		{[]kgo.RecordHeader{{Key: wire.HeaderPart, Value: []byte("other")}}, "other"},
	} {
		r := &kgo.Record{Headers: c.hs}
		if got, want := partName(r, parts), wire.String(r.Headers, wire.HeaderPart); got != c.want || got != want {
			t.Errorf("partName(%v) = %q, want %q (wire.String %q)", c.hs, got, c.want, want)
		}
	}
}
