package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The repartition envelope (HeaderRepartition): everything stage one
// hands stage two about a record it writes to a repartition topic, in one
// binary header instead of seven text ones (HeaderSourceMax,
// HeaderEventTime, HeaderSourceKey, HeaderTopic, HeaderPartition,
// HeaderOffset, HeaderFields). Their long keys and decimal values were
// more bytes than a typical value, and every fetched record allocated a
// string per key. The input's own headers stay before it, as they were
// before the seven.
//
// Encoding, version 1 (signed numbers zigzag varints, lengths unsigned
// varints, encoding/binary):
//
//	envelope = version(0x01) flags event_time [source_max] partition offset
//	           topic_len topic [key_len key] [fields]
//
// flags: FlagAligned (source_max follows; math.MinInt64 is "the source had
// none yet", the old header's empty value), FlagKey (the source record had
// a key, even an empty one; without it the key was nil), FlagFields (the
// rest of the envelope is the fields header's value, AppendFields). Other
// bits and bytes after the last part are errors: a newer writer's
// envelope is not misread.
//
// Stage two writes out (late, overflow, duplicate and dirty records) the
// seven headers as they were (ExpandRepartition), so what reaches a
// side route is unchanged byte for byte, and reads records without an
// envelope (written before it) from the seven.

// HeaderRepartition is the repartition envelope's header.
const HeaderRepartition = "sidestream.r"

// EnvelopeVersion is the first byte of an envelope this build writes.
const EnvelopeVersion byte = 1

// The envelope's flag bits.
const (
	FlagAligned byte = 1 << iota
	FlagKey
	FlagFields
	flagsKnown = FlagAligned | FlagKey | FlagFields
)

// ErrEnvelope is the error of an envelope that does not decode.
var ErrEnvelope = errors.New("repartition envelope")

// Envelope is what a repartition envelope holds. Its byte slices are
// views of the header's value (ParseEnvelope).
type Envelope struct {
	EventTime int64
	// Aligned: the record carries its source's maximum event time before
	// it, SourceMax (math.MinInt64 when the source had none yet).
	Aligned   bool
	SourceMax int64
	Partition int64
	Offset    int64
	Topic     []byte
	// Key is the source record's key; HasKey: it had one (else nil).
	Key    []byte
	HasKey bool
	// Fields is the fields header's value (AppendFields); HasFields: the
	// route carries fields (a window route).
	Fields    []byte
	HasFields bool
}

// EnvelopeSize is an upper bound of the envelope of e's length.
func EnvelopeSize(e *Envelope) int {
	return 2 + 4*binary.MaxVarintLen64 + 2*binary.MaxVarintLen32 + len(e.Topic) + len(e.Key) + len(e.Fields)
}

// AppendEnvelope appends the envelope of e to dst.
func AppendEnvelope(dst []byte, e *Envelope) []byte {
	var flags byte
	if e.Aligned {
		flags |= FlagAligned
	}
	if e.HasKey {
		flags |= FlagKey
	}
	if e.HasFields {
		flags |= FlagFields
	}
	dst = append(dst, EnvelopeVersion, flags)
	dst = binary.AppendVarint(dst, e.EventTime)
	if e.Aligned {
		dst = binary.AppendVarint(dst, e.SourceMax)
	}
	dst = binary.AppendVarint(dst, e.Partition)
	dst = binary.AppendVarint(dst, e.Offset)
	dst = binary.AppendUvarint(dst, uint64(len(e.Topic)))
	dst = append(dst, e.Topic...)
	if e.HasKey {
		dst = binary.AppendUvarint(dst, uint64(len(e.Key)))
		dst = append(dst, e.Key...)
	}
	if e.HasFields {
		dst = append(dst, e.Fields...)
	}
	return dst
}

// envReader reads an envelope's parts, keeping the first error.
type envReader struct {
	b   []byte
	err error
}

func (r *envReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: bad %s", ErrEnvelope, what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *envReader) bytes(what string) []byte {
	if r.err != nil {
		return nil
	}
	l, n := binary.Uvarint(r.b)
	if n <= 0 || l > uint64(len(r.b)-n) {
		r.err = fmt.Errorf("%w: bad %s", ErrEnvelope, what)
		return nil
	}
	v := r.b[n : n+int(l) : n+int(l)]
	r.b = r.b[n+int(l):]
	return v
}

// ParseEnvelope decodes an envelope (AppendEnvelope); its slices are
// views of b. An error wraps ErrEnvelope.
func ParseEnvelope(b []byte) (Envelope, error) {
	var e Envelope
	if len(b) < 2 {
		return e, fmt.Errorf("%w: %d bytes", ErrEnvelope, len(b))
	}
	if b[0] != EnvelopeVersion {
		return e, fmt.Errorf("%w: version %d (this build reads %d)", ErrEnvelope, b[0], EnvelopeVersion)
	}
	flags := b[1]
	if flags&^flagsKnown != 0 {
		return e, fmt.Errorf("%w: unknown flags %#x", ErrEnvelope, flags)
	}
	r := envReader{b: b[2:]}
	e.EventTime = r.varint("event time")
	if e.Aligned = flags&FlagAligned != 0; e.Aligned {
		e.SourceMax = r.varint("source maximum")
	}
	e.Partition = r.varint("partition")
	e.Offset = r.varint("offset")
	e.Topic = r.bytes("topic")
	if e.HasKey = flags&FlagKey != 0; e.HasKey {
		e.Key = r.bytes("key")
	}
	if r.err != nil {
		return Envelope{}, r.err
	}
	if e.HasFields = flags&FlagFields != 0; e.HasFields {
		e.Fields, r.b = r.b[:len(r.b):len(r.b)], nil
	}
	if len(r.b) > 0 {
		return Envelope{}, fmt.Errorf("%w: %d bytes after its end", ErrEnvelope, len(r.b))
	}
	return e, nil
}

// envelopeIndex is the index of the first envelope header of hs, -1 when
// there is none.
func envelopeIndex(hs []kgo.RecordHeader) int {
	for i := range hs {
		if hs[i].Key == HeaderRepartition {
			return i
		}
	}
	return -1
}

// ExpandRepartition is hs with its envelope (the first) in the seven
// headers stage one wrote before the envelope, in their order and with
// their values (HeaderSourceMax when aligned, HeaderEventTime,
// HeaderSourceKey, HeaderTopic, HeaderPartition, HeaderOffset,
// HeaderFields when carried): what stage two writes out of a record is
// what it was before the envelope. hs itself when it has no envelope or
// one that does not decode (then it is written out as it came).
func ExpandRepartition(hs []kgo.RecordHeader) []kgo.RecordHeader {
	i := envelopeIndex(hs)
	if i < 0 {
		return hs
	}
	if _, err := ParseEnvelope(hs[i].Value); err != nil {
		return hs
	}
	return AppendExpanded(make([]kgo.RecordHeader, 0, len(hs)+ExpandedExtra), hs)
}

// ExpandedExtra is how many more headers ExpandRepartition gives at most
// than it is given.
const ExpandedExtra = 6

// AppendExpanded appends to dst the headers ExpandRepartition gives of
// hs, without their own slice.
func AppendExpanded(dst, hs []kgo.RecordHeader) []kgo.RecordHeader {
	i := envelopeIndex(hs)
	if i < 0 {
		return append(dst, hs...)
	}
	e, err := ParseEnvelope(hs[i].Value)
	if err != nil {
		return append(dst, hs...)
	}
	out := append(dst, hs[:i]...)
	// The values share one buffer, each capped at its end.
	buf := make([]byte, 0, 4*20+len(e.Topic))
	num := func(n int64) []byte {
		start := len(buf)
		buf = strconv.AppendInt(buf, n, 10)
		return buf[start:len(buf):len(buf)]
	}
	if e.Aligned {
		var b []byte
		if e.SourceMax != math.MinInt64 {
			b = num(e.SourceMax)
		}
		out = append(out, kgo.RecordHeader{Key: HeaderSourceMax, Value: b})
	}
	et := num(e.EventTime)
	var key []byte
	if e.HasKey {
		key = e.Key
	}
	start := len(buf)
	buf = append(buf, e.Topic...)
	topic := buf[start:len(buf):len(buf)]
	out = append(out,
		kgo.RecordHeader{Key: HeaderEventTime, Value: et},
		kgo.RecordHeader{Key: HeaderSourceKey, Value: key},
		kgo.RecordHeader{Key: HeaderTopic, Value: topic},
		kgo.RecordHeader{Key: HeaderPartition, Value: num(e.Partition)},
		kgo.RecordHeader{Key: HeaderOffset, Value: num(e.Offset)},
	)
	if e.HasFields {
		out = append(out, kgo.RecordHeader{Key: HeaderFields, Value: e.Fields})
	}
	return append(out, hs[i+1:]...)
}
