package wire

import (
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Reads of the router's headers on the per-record path of stage two:
// numbers parsed from the bytes, and every header a repartitioned record
// carries found in one pass, not once per read.

// ParseInt is strconv.ParseInt(string(b), 10, 64): its value (the
// clamped bound on a range error) and whether it had no error, without
// making a string of b for the common case (a sign and at most 18
// digits, which cannot overflow).
func ParseInt(b []byte) (int64, bool) {
	digits := b
	if len(digits) > 0 && (digits[0] == '-' || digits[0] == '+') {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return parseIntSlow(b)
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return parseIntSlow(b)
		}
		n = n*10 + int64(c-'0')
	}
	if b[0] == '-' {
		n = -n
	}
	return n, true
}

func parseIntSlow(b []byte) (int64, bool) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

// Repartition is what stage two reads of the headers of a record stage
// one wrote to a repartition topic: from its envelope (HeaderRepartition,
// the first) when it has one, else from the seven headers written before
// the envelope, each the first header of its key, as Value, String and
// Int read it, but Fields, the last one (stage one appends it after the
// input's own headers).
type Repartition struct {
	EventTime   int64 // HeaderEventTime
	EventTimeOK bool  // there is one and it is a number
	SourceKey   []byte
	Topic       []byte // HeaderTopic, nil when none
	Partition   int64
	PartitionOK bool
	// Offset is Int's value of HeaderOffset (0 when none).
	Offset int64
	// HasSourceMax: the record carries its source's maximum event time
	// before it (aligned watermarks). SourceMax is the HeaderSourceMax
	// value (nil from an envelope); Before is that maximum,
	// math.MinInt64 when the source had none yet (an empty value), and
	// BeforeOK false when the value is not a number.
	SourceMax    []byte
	HasSourceMax bool
	Before       int64
	BeforeOK     bool
	// Fields is the last HeaderFields value; HasFields: there is one.
	Fields    []byte
	HasFields bool
	// Traceparent is the first HeaderTraceparent value (the input's own
	// header, before the envelope), nil when none; ParseTraceparent
	// reads it.
	Traceparent []byte
	// Err is the error of an envelope that does not decode (ErrEnvelope):
	// the rest is then read from the seven headers, as if it had none.
	Err error
}

// ReadRepartition reads the headers of a repartitioned record in one
// pass over hs.
func ReadRepartition(hs []kgo.RecordHeader) Repartition {
	var r Repartition
	var seenET, seenKey, seenTopic, seenPart, seenOff, seenEnv bool
	var env, tp []byte
	for i := range hs {
		h := &hs[i]
		switch h.Key {
		case HeaderRepartition:
			if !seenEnv {
				seenEnv, env = true, h.Value
			}
		case HeaderEventTime:
			if !seenET {
				seenET = true
				r.EventTime, r.EventTimeOK = ParseInt(h.Value)
			}
		case HeaderSourceKey:
			if !seenKey {
				seenKey = true
				r.SourceKey = h.Value
			}
		case HeaderTopic:
			if !seenTopic {
				seenTopic = true
				r.Topic = h.Value
			}
		case HeaderPartition:
			if !seenPart {
				seenPart = true
				r.Partition, r.PartitionOK = ParseInt(h.Value)
			}
		case HeaderOffset:
			if !seenOff {
				seenOff = true
				r.Offset, _ = ParseInt(h.Value)
			}
		case HeaderSourceMax:
			if !r.HasSourceMax {
				r.HasSourceMax = true
				r.SourceMax = h.Value
			}
		case HeaderFields:
			r.Fields, r.HasFields = h.Value, true
		case HeaderTraceparent:
			if tp == nil {
				tp = h.Value[:len(h.Value):len(h.Value)]
			}
		}
	}
	r.Traceparent = tp
	if seenEnv {
		e, err := ParseEnvelope(env)
		if err == nil {
			r := fromEnvelope(&e)
			r.Traceparent = tp
			return r
		}
		r.Err = err
	}
	if r.HasSourceMax {
		r.Before, r.BeforeOK = int64(math.MinInt64), true
		if len(r.SourceMax) > 0 {
			r.Before, r.BeforeOK = ParseInt(r.SourceMax)
		}
	}
	return r
}

// fromEnvelope is the Repartition of an envelope.
func fromEnvelope(e *Envelope) Repartition {
	return Repartition{
		EventTime: e.EventTime, EventTimeOK: true,
		SourceKey: e.Key, Topic: e.Topic,
		Partition: e.Partition, PartitionOK: true,
		Offset:       e.Offset,
		HasSourceMax: e.Aligned, Before: e.SourceMax, BeforeOK: e.Aligned,
		Fields: e.Fields, HasFields: e.HasFields,
	}
}
