package wire

import "github.com/twmb/franz-go/pkg/kgo"

// W3C Trace Context (https://www.w3.org/TR/trace-context/) on records.
// An input's headers, traceparent among them, are copied to its plain
// route outputs, dirty and late records as they are. A window result or
// an assembly has many inputs: stage two keeps a bounded number of their
// contexts in its state, in the binary form below, and writes the first
// one's traceparent on what it emits (docs/tracing.md).

// HeaderTraceparent is the W3C traceparent header, lower case as the
// specification's HTTP header and every Kafka instrumentation write it.
const HeaderTraceparent = "traceparent"

// TraceparentLen is the length of a version 00 traceparent:
// "00-" 32 hex "-" 16 hex "-" 2 hex.
const TraceparentLen = 55

// TraceContextLen is the length of a TraceContext's binary form
// (AppendBinary): trace id, span id, flags.
const TraceContextLen = 16 + 8 + 1

// TraceContext is one W3C trace context without its tracestate.
type TraceContext struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// Sampled reports the sampled flag (bit 0 of the trace flags).
func (tc TraceContext) Sampled() bool { return tc.Flags&1 != 0 }

// ParseTraceparent reads a traceparent header value. ok is false for a
// value the specification says to ignore: not 55 bytes with version 00
// (a later version's first 55 bytes are read as version 00 when the
// next byte is '-'), version ff, upper-case or non-hex digits, or an
// all-zero trace or span id.
func ParseTraceparent(b []byte) (tc TraceContext, ok bool) {
	if len(b) < TraceparentLen || b[2] != '-' || b[35] != '-' || b[52] != '-' {
		return tc, false
	}
	ver, ok1 := hexByte(b[0], b[1])
	switch {
	case !ok1 || ver == 0xff:
		return tc, false
	case ver == 0 && len(b) != TraceparentLen:
		return tc, false
	case ver != 0 && len(b) > TraceparentLen && b[TraceparentLen] != '-':
		return tc, false
	}
	var zero byte
	for i := range tc.TraceID {
		v, ok := hexByte(b[3+2*i], b[4+2*i])
		if !ok {
			return TraceContext{}, false
		}
		tc.TraceID[i] = v
		zero |= v
	}
	if zero == 0 {
		return TraceContext{}, false
	}
	zero = 0
	for i := range tc.SpanID {
		v, ok := hexByte(b[36+2*i], b[37+2*i])
		if !ok {
			return TraceContext{}, false
		}
		tc.SpanID[i] = v
		zero |= v
	}
	if zero == 0 {
		return TraceContext{}, false
	}
	f, ok1 := hexByte(b[53], b[54])
	if !ok1 {
		return TraceContext{}, false
	}
	tc.Flags = f
	return tc, true
}

// AppendTraceparent appends tc as a version 00 traceparent.
func AppendTraceparent(dst []byte, tc TraceContext) []byte {
	dst = append(dst, '0', '0', '-')
	for _, v := range tc.TraceID {
		dst = append(dst, hexDigits[v>>4], hexDigits[v&15])
	}
	dst = append(dst, '-')
	for _, v := range tc.SpanID {
		dst = append(dst, hexDigits[v>>4], hexDigits[v&15])
	}
	return append(dst, '-', hexDigits[tc.Flags>>4], hexDigits[tc.Flags&15])
}

// AppendBinary appends tc's binary form: TraceContextLen bytes, what a
// window or assembly keeps in its state.
func (tc TraceContext) AppendBinary(dst []byte) []byte {
	dst = append(dst, tc.TraceID[:]...)
	dst = append(dst, tc.SpanID[:]...)
	return append(dst, tc.Flags)
}

// TraceContextFromBinary reads what AppendBinary wrote; ok is false for
// any other length.
func TraceContextFromBinary(b []byte) (tc TraceContext, ok bool) {
	if len(b) != TraceContextLen {
		return tc, false
	}
	copy(tc.TraceID[:], b)
	copy(tc.SpanID[:], b[16:])
	tc.Flags = b[24]
	return tc, true
}

// Traceparent is the first traceparent header of hs that parses, read
// without allocating.
func Traceparent(hs []kgo.RecordHeader) (TraceContext, bool) {
	for i := range hs {
		if hs[i].Key == HeaderTraceparent {
			return ParseTraceparent(hs[i].Value)
		}
	}
	return TraceContext{}, false
}

const hexDigits = "0123456789abcdef"

// hexByte is the byte of two lower-case hex digits.
func hexByte(hi, lo byte) (byte, bool) {
	h, ok1 := hexNibble(hi)
	l, ok2 := hexNibble(lo)
	return h<<4 | l, ok1 && ok2
}

func hexNibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
