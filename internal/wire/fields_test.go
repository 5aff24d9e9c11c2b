package wire

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fieldsSample has every kind of the value model, an int64 beyond 2^53
// and the float64 values JSON has no text for.
func fieldsSample() map[string]any {
	return map[string]any{
		"id": 1<<62 + 1, "neg": -9007199254740993, "zero": 0, "f": 0.1, "negzero": math.Copysign(0, -1),
		"inf": math.Inf(-1), "s": "héllo", "empty": "", "dec": "12.340", "t": true, "nope": false, "null": nil,
		"nested": map[string]any{"a": []any{1, 2.5, "x", nil, map[string]any{}}, "b": map[string]any{"c": []any{}}},
	}
}

func sortedNames(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func TestFieldsRoundTrip(t *testing.T) {
	in := fieldsSample()
	b, err := AppendFields(nil, sortedNames(in), in)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != FieldsVersion {
		t.Fatalf("first byte %d, want the version %d", b[0], FieldsVersion)
	}
	out, err := DecodeFields(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", out, in)
	}
	if !math.Signbit(out["negzero"].(float64)) {
		t.Fatal("-0 lost its sign")
	}
	// int64 and int are one integer kind.
	b2, err := AppendFields(nil, []string{"x"}, map[string]any{"x": int64(-5)})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := DecodeFields(b2); err != nil || out["x"] != -5 {
		t.Fatalf("int64: %#v, %v", out, err)
	}
}

// TestFieldsNamesChosen: only the named fields that are there, in the
// names' order; nested objects by name, so one value has one encoding.
func TestFieldsNamesChosen(t *testing.T) {
	in := map[string]any{"a": 1, "b": map[string]any{"z": 1, "y": 2, "x": 3}, "c": "left out"}
	b, err := AppendFields(nil, []string{"b", "missing", "a"}, in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeFields(b)
	if err != nil || len(out) != 2 || out["a"] != 1 || out["c"] != nil {
		t.Fatalf("got %#v, %v", out, err)
	}
	for range 20 {
		again, _ := AppendFields(nil, []string{"b", "missing", "a"}, in)
		if !bytes.Equal(b, again) {
			t.Fatalf("encodings differ: %x and %x", b, again)
		}
	}
	want := []byte{1, 2, 1, 'b', tagObject, 3, 1, 'x', tagInt, 6, 1, 'y', tagInt, 4, 1, 'z', tagInt, 2, 1, 'a', tagInt, 2}
	if !bytes.Equal(b, want) {
		t.Fatalf("bytes %v, want %v", b, want)
	}
	empty, _ := AppendFields(nil, nil, in)
	if out, err := DecodeFields(empty); err != nil || len(out) != 0 || len(empty) != 2 {
		t.Fatalf("no fields: %x -> %#v, %v", empty, out, err)
	}
}

func TestFieldsEncodeRefuses(t *testing.T) {
	deep := any(1)
	for range MaxFieldsDepth + 1 {
		deep = []any{deep}
	}
	for name, v := range map[string]any{"type": struct{}{}, "float32": float32(1), "deep": deep, "nested type": []any{uint8(1)}} {
		if _, err := AppendFields(nil, []string{"x"}, map[string]any{"x": v}); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	ok := any(1)
	for range MaxFieldsDepth - 1 {
		ok = []any{ok}
	}
	b, err := AppendFields(nil, []string{"x"}, map[string]any{"x": ok})
	if err != nil {
		t.Fatalf("%d deep: %v", MaxFieldsDepth, err)
	}
	if _, err := DecodeFields(b); err != nil {
		t.Fatalf("%d deep does not decode: %v", MaxFieldsDepth, err)
	}
}

func TestFieldsCorrupt(t *testing.T) {
	good, err := AppendFields(nil, []string{"a", "s"}, map[string]any{"a": 1.5, "s": "str"})
	if err != nil {
		t.Fatal(err)
	}
	deep := []byte{1, 1, 1, 'x'}
	for range MaxFieldsDepth + 1 {
		deep = append(deep, tagArray, 1)
	}
	deep = append(deep, tagNull)
	for name, b := range map[string][]byte{
		"empty":           {},
		"no count":        {1},
		"count too large": {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"truncated":       good[:len(good)-1],
		"trailing":        append(bytes.Clone(good), 0),
		"unknown tag":     {1, 1, 1, 'x', 0x42},
		"no value":        {1, 1, 1, 'x'},
		"bad utf8 name":   {1, 1, 1, 0xff, tagNull},
		"bad utf8 string": {1, 1, 1, 'x', tagString, 1, 0xc3},
		"repeated name":   {1, 2, 1, 'x', tagNull, 1, 'x', tagTrue},
		"short float":     {1, 1, 1, 'x', tagFloat, 0, 0},
		"bad varint":      {1, 1, 1, 'x', tagInt, 0x80},
		"huge array":      {1, 1, 1, 'x', tagArray, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"huge string":     {1, 1, 1, 'x', tagString, 0x10},
		"too deep":        deep,
	} {
		_, err := DecodeFields(b)
		var fe *FieldsError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %v, want a *FieldsError", name, err)
		}
	}
	_, err = DecodeFields([]byte{2, 0})
	if !errors.Is(err, ErrFieldsVersion) || !strings.Contains(err.Error(), "2") {
		t.Errorf("version 2: %v, want ErrFieldsVersion naming it", err)
	}
}

// FuzzDecodeFields: any bytes decode to the value model or fail with an
// error, never a panic; what decodes encodes again and decodes back to
// the same value.
func FuzzDecodeFields(f *testing.F) {
	in := fieldsSample()
	b, _ := AppendFields(nil, sortedNames(in), in)
	f.Add(b)
	f.Add([]byte{1, 0})
	f.Add([]byte{1, 1, 1, 'x', tagArray, 2, tagInt, 3, tagString, 1, 'y'})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeFields(b)
		if err != nil {
			return
		}
		again, err := AppendFields(nil, sortedNames(m), m)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", m, err)
		}
		m2, err := DecodeFields(again)
		if err != nil || !sameFields(m, m2) {
			t.Fatalf("re-encoded %x decodes to %#v, %v; want %#v", again, m2, err, m)
		}
	})
}

// sameFields is reflect.DeepEqual with NaN equal to itself.
func sameFields(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameFields(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameFields(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}
