package wire

import (
	"bytes"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FuzzParseInt: ParseInt is strconv.ParseInt on any bytes, value (the
// clamped bound on a range error) and success alike.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "+7", "1733140800000", "-9223372036854775808", "9223372036854775807",
		"9223372036854775808", "999999999999999999", "1000000000000000000", "", "-", "+", "1_000", "0x10", " 1", "1e3", "٣"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, err := strconv.ParseInt(string(b), 10, 64)
		got, ok := ParseInt(b)
		if got != want || ok != (err == nil) {
			t.Fatalf("ParseInt(%q) = %d %v, strconv: %d %v", b, got, ok, want, err)
		}
	})
}

func TestParseIntAllocs(t *testing.T) {
	for _, s := range []string{"1733140800000", "-42", "+3", "0"} {
		b := []byte(s)
		if n := testing.AllocsPerRun(100, func() { _, _ = ParseInt(b) }); n != 0 {
			t.Errorf("ParseInt(%q): %v allocations", s, n)
		}
	}
}

// repartitionKeys are the keys FuzzReadRepartition draws headers from.
var repartitionKeys = []string{HeaderEventTime, HeaderSourceKey, HeaderTopic, HeaderPartition, HeaderOffset,
	HeaderSourceMax, HeaderFields, "user", HeaderReason}

// FuzzReadRepartition: ReadRepartition gives what a read per header
// gives (Value, String, Int: the first of a key), and the last fields
// header, for any headers.
func FuzzReadRepartition(f *testing.F) {
	f.Add([]byte{0, 1, '4', '2', 0xff, 2, 0, 0xff, 6, 1, 0, 0xff, 0, 0, 0xff, 3, '-', '1'})
	f.Add([]byte{4, 0xff, 5, 0xff, 6, 1, 0xff, 6, 1, 1, 1, 'x', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		// Headers: a key byte, then the value up to 0xff.
		var hs []kgo.RecordHeader
		for len(b) > 0 {
			k := repartitionKeys[int(b[0])%len(repartitionKeys)]
			v, rest, _ := bytes.Cut(b[1:], []byte{0xff})
			hs, b = append(hs, kgo.RecordHeader{Key: k, Value: v}), rest
		}
		r := ReadRepartition(hs)
		et, etOK := Int(hs, HeaderEventTime)
		part, partOK := Int(hs, HeaderPartition)
		off, _ := Int(hs, HeaderOffset)
		key, _ := Value(hs, HeaderSourceKey)
		topic, _ := Value(hs, HeaderTopic)
		sm, hasSM := Value(hs, HeaderSourceMax)
		var fields []byte
		var hasFields bool
		for _, h := range slices.Backward(hs) {
			if h.Key == HeaderFields {
				fields, hasFields = h.Value, true
				break
			}
		}
		if r.EventTime != et || r.EventTimeOK != etOK || r.Partition != part || r.PartitionOK != partOK || r.Offset != off ||
			!bytes.Equal(r.SourceKey, key) || !bytes.Equal(r.Topic, topic) || string(r.Topic) != String(hs, HeaderTopic) ||
			!bytes.Equal(r.SourceMax, sm) || r.HasSourceMax != hasSM || !bytes.Equal(r.Fields, fields) || r.HasFields != hasFields {
			t.Fatalf("ReadRepartition(%v) = %+v", hs, r)
		}
	})
}

// intoNames are the names FuzzDecodeFieldsInto numbers, sorted.
var intoNames = []string{"a", "b", "id", "s", "x"}

func intoSlot(name []byte) (int, bool) {
	return slices.BinarySearch(intoNames, string(name))
}

// FuzzDecodeFieldsInto: what DecodeFieldsInto decodes, DecodeFields
// decodes to the same fields (absent ones nil); and a header stage one
// writes (names sorted, all numbered) it always decodes.
func FuzzDecodeFieldsInto(f *testing.F) {
	f.Add([]byte{1, 0})
	f.Add([]byte{1, 1, 1, 'x', tagArray, 2, tagInt, 3, tagString, 1, 'y'})
	f.Add([]byte{1, 2, 1, 'a', tagTrue, 1, 'x', tagInt, 4})
	f.Add([]byte{1, 2, 1, 'x', tagTrue, 1, 'a', tagInt, 4})
	f.Add([]byte{1, 2, 1, 'x', tagNull, 1, 'x', tagTrue})
	f.Add([]byte{1, 1, 1, 'q', tagNull})
	f.Fuzz(func(t *testing.T, b []byte) {
		vals := make([]any, len(intoNames))
		ok := DecodeFieldsInto(b, intoSlot, vals)
		m, err := DecodeFields(b)
		if ok {
			if err != nil {
				t.Fatalf("%x: Into decoded, DecodeFields: %v", b, err)
			}
			for i, n := range intoNames {
				if !sameFields(vals[i], m[n]) {
					t.Fatalf("%x: field %s = %#v, DecodeFields %#v", b, n, vals[i], m[n])
				}
			}
			for n := range m {
				if _, known := intoSlot([]byte(n)); !known {
					t.Fatalf("%x: Into decoded a header naming %q", b, n)
				}
			}
			return
		}
		if err != nil {
			return
		}
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range m {
				if !yield(n) {
					return
				}
			}
		})
		for _, n := range names {
			if _, known := intoSlot([]byte(n)); !known {
				return // a name not numbered: not covered
			}
		}
		again, err := AppendFields(nil, names, m)
		if err != nil {
			t.Fatal(err)
		}
		if !DecodeFieldsInto(again, intoSlot, vals) {
			t.Fatalf("%x: stage one's encoding %x of %#v not decoded", b, again, m)
		}
	})
}

func TestDecodeFieldsIntoAllocs(t *testing.T) {
	none, err := AppendFields(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	small, err := AppendFields(nil, []string{"a", "x"}, map[string]any{"a": true, "x": 7})
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]any, len(intoNames))
	for _, b := range [][]byte{none, small} {
		if n := testing.AllocsPerRun(100, func() {
			if !DecodeFieldsInto(b, intoSlot, vals) {
				t.Fatalf("%x not decoded", b)
			}
		}); n != 0 {
			t.Errorf("%x: %v allocations", b, n)
		}
	}
	if vals[0] != true || vals[4] != 7 {
		t.Fatalf("vals %v", vals)
	}
}
