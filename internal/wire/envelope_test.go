package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// envelopeFrom is the envelope the fuzz arguments describe: flags' low
// bits say which optional parts it has.
func envelopeFrom(flags byte, et, smax, part, off int64, topic, key, fields []byte) Envelope {
	e := Envelope{EventTime: et, Partition: part, Offset: off, Topic: topic}
	if flags&FlagAligned != 0 {
		e.Aligned, e.SourceMax = true, smax
	}
	if flags&FlagKey != 0 {
		e.Key, e.HasKey = key, true
	}
	if flags&FlagFields != 0 {
		e.Fields, e.HasFields = fields, true
	}
	return e
}

// sameEnvelope: a and b hold the same (the slices by their bytes).
func sameEnvelope(a, b *Envelope) bool {
	return a.EventTime == b.EventTime && a.Aligned == b.Aligned && a.SourceMax == b.SourceMax &&
		a.Partition == b.Partition && a.Offset == b.Offset && bytes.Equal(a.Topic, b.Topic) &&
		a.HasKey == b.HasKey && bytes.Equal(a.Key, b.Key) && a.HasFields == b.HasFields && bytes.Equal(a.Fields, b.Fields)
}

// oldHeaders are the seven headers stage one wrote before the envelope,
// one by one, for e (what ExpandRepartition must give).
func oldHeaders(e *Envelope) []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	if e.Aligned {
		var v []byte
		if e.SourceMax != math.MinInt64 {
			v = []byte(strconv.FormatInt(e.SourceMax, 10))
		}
		hs = append(hs, kgo.RecordHeader{Key: HeaderSourceMax, Value: v})
	}
	var key []byte
	if e.HasKey {
		key = append([]byte{}, e.Key...)
	}
	hs = append(hs,
		kgo.RecordHeader{Key: HeaderEventTime, Value: []byte(strconv.FormatInt(e.EventTime, 10))},
		kgo.RecordHeader{Key: HeaderSourceKey, Value: key},
		kgo.RecordHeader{Key: HeaderTopic, Value: append([]byte{}, e.Topic...)},
		kgo.RecordHeader{Key: HeaderPartition, Value: []byte(strconv.FormatInt(e.Partition, 10))},
		kgo.RecordHeader{Key: HeaderOffset, Value: []byte(strconv.FormatInt(e.Offset, 10))})
	if e.HasFields {
		hs = append(hs, kgo.RecordHeader{Key: HeaderFields, Value: append([]byte{}, e.Fields...)})
	}
	return hs
}

// sameRead: the reads of the envelope and of the seven headers agree
// (SourceMax, the old header's text, aside).
func sameRead(a, b *Repartition) bool {
	return a.EventTime == b.EventTime && a.EventTimeOK == b.EventTimeOK && bytes.Equal(a.SourceKey, b.SourceKey) &&
		bytes.Equal(a.Topic, b.Topic) && a.Partition == b.Partition && a.PartitionOK == b.PartitionOK &&
		a.Offset == b.Offset && a.HasSourceMax == b.HasSourceMax && a.Before == b.Before && a.BeforeOK == b.BeforeOK &&
		bytes.Equal(a.Fields, b.Fields) && a.HasFields == b.HasFields && a.Err == nil && b.Err == nil
}

// FuzzEnvelopeRoundTrip: an envelope decodes to what was encoded;
// ExpandRepartition gives exactly the seven headers stage one wrote one
// by one before it, in place among the input's own; and ReadRepartition
// reads the same of the envelope as of those seven.
func FuzzEnvelopeRoundTrip(f *testing.F) {
	f.Add(byte(7), int64(1_733_140_800_000), int64(math.MinInt64), int64(3), int64(42), []byte("logs"), []byte("k"), []byte{1, 0})
	f.Add(byte(0), int64(-1), int64(0), int64(-1), int64(-2), []byte{}, []byte{}, []byte{})
	f.Add(byte(3), int64(math.MinInt64), int64(math.MaxInt64), int64(math.MaxInt32), int64(math.MaxInt64), []byte("t"), []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, flags byte, et, smax, part, off int64, topic, key, fields []byte) {
		e := envelopeFrom(flags, et, smax, part, off, topic, key, fields)
		b := AppendEnvelope([]byte("prefix"), &e)[len("prefix"):]
		if len(b) > EnvelopeSize(&e) {
			t.Fatalf("%d bytes, EnvelopeSize %d", len(b), EnvelopeSize(&e))
		}
		got, err := ParseEnvelope(b)
		if err != nil || !sameEnvelope(&got, &e) {
			t.Fatalf("ParseEnvelope(%x) = %+v, %v; want %+v", b, got, err, e)
		}
		input := []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}}
		hs := append(append([]kgo.RecordHeader{}, input...), kgo.RecordHeader{Key: HeaderRepartition, Value: b}, kgo.RecordHeader{Key: HeaderPart, Value: []byte("p")})
		want := append(append(append([]kgo.RecordHeader{}, input...), oldHeaders(&e)...), kgo.RecordHeader{Key: HeaderPart, Value: []byte("p")})
		exp := ExpandRepartition(hs)
		if !reflect.DeepEqual(exp, want) {
			t.Fatalf("ExpandRepartition = %q, want %q", exp, want)
		}
		if r, old := ReadRepartition(hs), ReadRepartition(exp); !sameRead(&r, &old) {
			t.Fatalf("ReadRepartition: envelope %+v, the seven headers %+v", r, old)
		}
	})
}

// FuzzParseEnvelope: any bytes decode or fail with ErrEnvelope, never a
// panic; what decodes encodes to bytes that decode the same; a record
// with a bad envelope is read and written out as if it had none.
func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 7, 2, 0, 6, 84, 4, 'l', 'o', 'g', 's', 1, 'k', 1, 0})
	f.Add([]byte{1, 0xf0, 0})
	f.Add([]byte{2, 0})
	f.Add([]byte{1, 0, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		hs := []kgo.RecordHeader{{Key: HeaderRepartition, Value: b}, {Key: HeaderEventTime, Value: []byte("5")}}
		e, err := ParseEnvelope(b)
		r := ReadRepartition(hs)
		if err != nil {
			if !errors.Is(err, ErrEnvelope) {
				t.Fatalf("%x: error %v is not ErrEnvelope", b, err)
			}
			if !errors.Is(r.Err, ErrEnvelope) || r.EventTime != 5 || !r.EventTimeOK {
				t.Fatalf("%x: a bad envelope read as %+v, want its error and the other headers", b, r)
			}
			if exp := ExpandRepartition(hs); !reflect.DeepEqual(exp, hs) {
				t.Fatalf("%x: a bad envelope expanded to %q", b, exp)
			}
			_ = Decode(hs)
			return
		}
		again, err := ParseEnvelope(AppendEnvelope(nil, &e))
		if err != nil || !sameEnvelope(&again, &e) {
			t.Fatalf("%x: %+v encodes to what decodes as %+v, %v", b, e, again, err)
		}
		if !r.EventTimeOK || r.EventTime != e.EventTime || r.Err != nil {
			t.Fatalf("%x: read %+v, want the envelope's event time %d", b, r, e.EventTime)
		}
		_ = Decode(hs)
	})
}

// TestEnvelopeGolden pins the encoding: envelopes are on repartition
// topics already written, so a changed byte breaks every stage two
// reading them.
func TestEnvelopeGolden(t *testing.T) {
	e := Envelope{EventTime: 1_733_140_800_000, Aligned: true, SourceMax: 1_733_140_799_000, Partition: 3, Offset: 42,
		Topic: []byte("logs"), Key: []byte("k1"), HasKey: true, Fields: []byte{1, 0}, HasFields: true}
	const want = "0107" + "8088eff3f064" + "b0f8eef3f064" + "06" + "54" + "04" + "6c6f6773" + "02" + "6b31" + "0100"
	if got := hex.EncodeToString(AppendEnvelope(nil, &e)); got != want {
		t.Fatalf("envelope %s, want %s", got, want)
	}
	b, _ := hex.DecodeString(want)
	got, err := ParseEnvelope(b)
	if err != nil || !sameEnvelope(&got, &e) {
		t.Fatalf("ParseEnvelope = %+v, %v", got, err)
	}
}

// TestReadRepartitionOldFormat: records written before the envelope (the
// seven text headers after the input's own) are still read, field by
// field; golden headers as the version before the envelope wrote them.
func TestReadRepartitionOldFormat(t *testing.T) {
	hs := []kgo.RecordHeader{
		{Key: "trace", Value: []byte("abc")},
		{Key: "sidestream.source.max_event_time", Value: []byte("1733140799000")},
		{Key: "sidestream.event_time", Value: []byte("1733140800000")},
		{Key: "sidestream.source.key", Value: []byte("k1")},
		{Key: "sidestream.source.topic", Value: []byte("logs")},
		{Key: "sidestream.source.partition", Value: []byte("3")},
		{Key: "sidestream.source.offset", Value: []byte("42")},
		{Key: "sidestream.fields", Value: []byte{1, 0}},
	}
	r := ReadRepartition(hs)
	want := Repartition{EventTime: 1_733_140_800_000, EventTimeOK: true, SourceKey: []byte("k1"), Topic: []byte("logs"),
		Partition: 3, PartitionOK: true, Offset: 42, SourceMax: []byte("1733140799000"), HasSourceMax: true,
		Before: 1_733_140_799_000, BeforeOK: true, Fields: []byte{1, 0}, HasFields: true}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("ReadRepartition = %+v, want %+v", r, want)
	}
	// Nothing to expand: written out as it came.
	if exp := ExpandRepartition(hs); !reflect.DeepEqual(exp, hs) {
		t.Fatalf("ExpandRepartition changed old headers: %q", exp)
	}
	// The envelope of the same record reads the same and expands to them.
	e := Envelope{EventTime: 1_733_140_800_000, Aligned: true, SourceMax: 1_733_140_799_000, Partition: 3, Offset: 42,
		Topic: []byte("logs"), Key: []byte("k1"), HasKey: true, Fields: []byte{1, 0}, HasFields: true}
	env := []kgo.RecordHeader{hs[0], {Key: HeaderRepartition, Value: AppendEnvelope(nil, &e)}}
	if exp := ExpandRepartition(env); !reflect.DeepEqual(exp, hs) {
		t.Fatalf("ExpandRepartition = %q, want %q", exp, hs)
	}
	if got := ReadRepartition(env); !sameRead(&got, &r) {
		t.Fatalf("envelope read %+v, headers %+v", got, r)
	}
	// An empty source maximum: the source had none yet.
	hs[1].Value = nil
	if r := ReadRepartition(hs); !r.HasSourceMax || r.Before != math.MinInt64 || !r.BeforeOK {
		t.Fatalf("empty source maximum read as %+v", r)
	}
	hs[1].Value = []byte("x")
	if r := ReadRepartition(hs); !r.HasSourceMax || r.BeforeOK {
		t.Fatalf("a source maximum that is not a number read as %+v", r)
	}
}

func TestReadRepartitionEnvelopeAllocs(t *testing.T) {
	e := Envelope{EventTime: 1_733_140_800_000, Aligned: true, SourceMax: math.MinInt64, Partition: 3, Offset: 42,
		Topic: []byte("logs"), Key: []byte("k1"), HasKey: true, Fields: []byte{1, 0}, HasFields: true}
	hs := []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}, {Key: HeaderRepartition, Value: AppendEnvelope(nil, &e)}}
	if n := testing.AllocsPerRun(100, func() {
		if r := ReadRepartition(hs); !r.EventTimeOK {
			t.Fatal("not read")
		}
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
