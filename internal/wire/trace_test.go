package wire

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTraceparentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tc, ok := ParseTraceparent([]byte(tp))
	if !ok || !tc.Sampled() || tc.TraceID[0] != 0x4b || tc.SpanID[7] != 0xb7 {
		t.Fatalf("parse %q: %+v %v", tp, tc, ok)
	}
	if got := string(AppendTraceparent(nil, tc)); got != tp {
		t.Fatalf("append: %q, want %q", got, tp)
	}
	b := tc.AppendBinary(nil)
	if len(b) != TraceContextLen {
		t.Fatalf("binary length %d", len(b))
	}
	back, ok := TraceContextFromBinary(b)
	if !ok || back != tc {
		t.Fatalf("binary round trip: %+v %v", back, ok)
	}
	if _, ok := TraceContextFromBinary(b[:24]); ok {
		t.Fatal("short binary form read")
	}
	hs := []kgo.RecordHeader{{Key: "x", Value: []byte("y")}, {Key: HeaderTraceparent, Value: []byte(tp)}}
	if got, ok := Traceparent(hs); !ok || got != tc {
		t.Fatalf("Traceparent(headers) = %+v %v", got, ok)
	}
}

func TestTraceparentRejects(t *testing.T) {
	for _, v := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",    // short
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // version 00 with more
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero span id
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // upper case
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",   // bad flags
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // later version, no dash
	} {
		if tc, ok := ParseTraceparent([]byte(v)); ok {
			t.Errorf("ParseTraceparent(%q) = %+v, want rejected", v, tc)
		}
	}
	// A later version is read as 00 when what follows is '-'.
	if _, ok := ParseTraceparent([]byte("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra")); !ok {
		t.Error("a later version with a dash-separated tail is rejected")
	}
}

func TestTraceparentAllocatesNothing(t *testing.T) {
	hs := []kgo.RecordHeader{{Key: HeaderTraceparent, Value: []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() {
		tc, _ := Traceparent(hs)
		buf = AppendTraceparent(buf[:0], tc)
		buf = tc.AppendBinary(buf[:0])
	}); n != 0 {
		t.Fatalf("%v allocations per record", n)
	}
}

// FuzzTraceparent: ParseTraceparent decides as the specification's
// rules spelled out plainly (refTraceparent), and whatever parses formats
// back to its own first 55 bytes (with the version as 00).
func FuzzTraceparent(f *testing.F) {
	f.Add([]byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	f.Add([]byte("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-x"))
	f.Add([]byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0G"))
	f.Add([]byte("00-00000000000000000000000000000000-00f067aa0ba902b7-01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tc, ok := ParseTraceparent(b)
		want, wantOK := refTraceparent(b)
		if ok != wantOK || tc != want {
			t.Fatalf("%q: parsed %+v %v, the plain rules %+v %v", b, tc, ok, want, wantOK)
		}
		if !ok {
			return
		}
		got := AppendTraceparent(nil, tc)
		if !bytes.Equal(got[2:], b[2:TraceparentLen]) {
			t.Fatalf("%q formats back as %q", b, got)
		}
	})
}

// refTraceparent is ParseTraceparent's oracle: the rules as written in
// its doc, with the standard library's hex decoder.
func refTraceparent(b []byte) (tc TraceContext, ok bool) {
	if len(b) < TraceparentLen {
		return tc, false
	}
	parts := strings.Split(string(b[:TraceparentLen]), "-")
	if len(parts) != 4 || len(parts[0]) != 2 || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return tc, false
	}
	var raw [4][]byte
	for i, p := range parts {
		v, err := hex.DecodeString(p)
		if err != nil || p != strings.ToLower(p) {
			return tc, false
		}
		raw[i] = v
	}
	ver := raw[0][0]
	if ver == 0xff || ver == 0 && len(b) != TraceparentLen || ver != 0 && len(b) > TraceparentLen && b[TraceparentLen] != '-' {
		return tc, false
	}
	copy(tc.TraceID[:], raw[1])
	copy(tc.SpanID[:], raw[2])
	tc.Flags = raw[3][0]
	if tc.TraceID == [16]byte{} || tc.SpanID == [8]byte{} {
		return TraceContext{}, false
	}
	return tc, true
}

// BenchmarkTraceparent is the header read every input record pays with
// spans on (the sampling decision).
func BenchmarkTraceparent(b *testing.B) {
	hs := []kgo.RecordHeader{{Key: "x", Value: []byte("y")}, {Key: HeaderTraceparent, Value: []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Traceparent(hs); !ok {
			b.Fatal("rejected")
		}
	}
}
