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
	if len(b) < TraceparentLen {
		return tc, false
	}
	v := (*[TraceparentLen]byte)(b)
	if v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return tc, false
	}
	var ver [1]byte
	bad := unhexInto(ver[:], v[0:2])
	switch {
	case bad != 0 || ver[0] == 0xff:
		return tc, false
	case ver[0] == 0 && len(b) != TraceparentLen:
		return tc, false
	case ver[0] != 0 && len(b) > TraceparentLen && b[TraceparentLen] != '-':
		return tc, false
	}
	var flags [1]byte
	bad = unhexInto(tc.TraceID[:], v[3:35]) | unhexInto(tc.SpanID[:], v[36:52]) | unhexInto(flags[:], v[53:55])
	if bad != 0 || tc.TraceID == [16]byte{} || tc.SpanID == [8]byte{} {
		return TraceContext{}, false
	}
	tc.Flags = flags[0]
	return tc, true
}

// unhexInto decodes the lower-case hex digits of src (2*len(dst) of
// them) into dst; it is not zero when one of them is not such a digit.
// It does not branch per digit: the traceparent of every input record
// is read (the sampling decision), so this is on the record path.
func unhexInto(dst, src []byte) (bad byte) {
	src = src[:2*len(dst)]
	for i := range dst {
		hi, lo := unhex[src[2*i]], unhex[src[2*i+1]]
		bad |= hi | lo
		dst[i] = hi<<4 | lo
	}
	return bad & 0xf0
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

// unhex is the value of a lower-case hex digit, 0xff for any other byte.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := range len(hexDigits) {
		t[hexDigits[i]] = byte(i)
	}
	return t
}()
