package lookup

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// value draws a value of the value model, nested to depth.
func value(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 7
		if depth == 0 {
			kinds = 5
		}
		switch rapid.IntRange(0, kinds).Draw(t, "kind") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return rapid.Int().Draw(t, "int")
		case 3:
			return rapid.Int64().Draw(t, "int64")
		case 4:
			f := rapid.Float64().Draw(t, "float")
			if math.IsNaN(f) {
				return 0.5
			}
			return f
		case 5:
			return rapid.String().Draw(t, "string")
		case 6:
			return rapid.MapOf(rapid.String(), value(depth-1)).Draw(t, "map")
		}
		return rapid.SliceOf(value(depth-1)).Draw(t, "list")
	})
}

// A row reads back as it was applied, whatever it holds, with the
// names interned or (past maxNames) written in the row; a type the
// encoding has not is kept as the row itself.
func TestRowEncoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var n names
		if rapid.Bool().Draw(t, "full") {
			for i := range maxNames {
				n.appendName(nil, fmt.Sprint("filler-", i))
			}
		}
		row := rapid.MapOf(rapid.String(), value(2)).Draw(t, "row")
		enc, ok := encodeRow(nil, &n, row)
		if !ok {
			t.Fatalf("%v: not encoded", row)
		}
		if got := decodeRow(string(enc), n.list); !reflect.DeepEqual(got, row) {
			t.Fatalf("decoded %#v, applied %#v", got, row)
		}
	})
	tb, _ := New(Spec{Mode: Current})
	odd := Row{"t": time.Unix(1, 0), "n": int32(3)}
	tb.Apply("k", 0, odd)
	if got, _ := tb.Get("k", 0); !reflect.DeepEqual(got, odd) {
		t.Fatalf("a row of other types: %#v", got)
	}
}

// A field read alone (Table.Field, decodeField) is the field of the row
// Get decodes whole, whatever the row holds, for names it has and not;
// so is a value from boxes, kept from this row or others.
func TestFieldDecode(t *testing.T) {
	var b boxes
	rapid.Check(t, func(t *rapid.T) {
		var n names
		if rapid.Bool().Draw(t, "full") {
			for i := range maxNames {
				n.appendName(nil, fmt.Sprint("filler-", i))
			}
		}
		row := rapid.MapOf(rapid.String(), value(2)).Draw(t, "row")
		enc, _ := encodeRow(nil, &n, row)
		name := rapid.String().Draw(t, "name")
		if len(row) > 0 && rapid.Bool().Draw(t, "present") {
			name = rapid.SampledFrom(mapKeys(row)).Draw(t, "field")
		}
		if got, want := decodeField(string(enc), n.list, name), decodeRow(string(enc), n.list)[name]; !reflect.DeepEqual(got, want) {
			t.Fatalf("field %q: %#v, the row's %#v", name, got, want)
		}
		for i := range 3 {
			want := decodeRow(string(enc), n.list)[name]
			if got := b.value(fieldEncoding(string(enc), n.list, name), n.list); !reflect.DeepEqual(got, want) {
				t.Fatalf("field %q from boxes (%d): %#v, the row's %#v", name, i, got, want)
			}
		}
	})
}

func mapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Table.Field answers as Get does, over both modes, tombstones, missing
// keys and rows kept as maps; AppendKey is KeyString.
func TestTableField(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := Spec{Mode: Current}
		if rapid.Bool().Draw(t, "asOf") {
			spec = Spec{Mode: AsOf, History: time.Duration(rapid.IntRange(1, 100).Draw(t, "history")) * time.Millisecond}
		}
		tb, _ := New(spec)
		keys := []string{"a", "b", "1", "c"}
		for range rapid.IntRange(0, 20).Draw(t, "applies") {
			var row Row
			switch rapid.IntRange(0, 3).Draw(t, "rowKind") {
			case 0: // a tombstone
			case 1:
				row = Row{"tier": time.Unix(1, 0), "n": int32(3)} // kept as its map
			default:
				row = rapid.MapOf(rapid.SampledFrom([]string{"tier", "n", "x"}), value(1)).Draw(t, "row")
			}
			tb.Apply(rapid.SampledFrom(keys).Draw(t, "key"), rapid.Int64Range(0, 200).Draw(t, "at"), row)
		}
		key := rapid.OneOf(rapid.Just[any]("a"), rapid.Just[any]("z"), rapid.Just[any](1), rapid.Just[any](int64(1)), rapid.Just[any](nil), rapid.Just[any](1.5)).Draw(t, "lookupKey")
		at := rapid.Int64Range(-10, 250).Draw(t, "lookupAt")
		name := rapid.SampledFrom([]string{"tier", "n", "x", "none"}).Draw(t, "name")
		ks, kok := KeyString(key)
		kb, bok := AppendKey(nil, key)
		if kok != bok || ks != string(kb) {
			t.Fatalf("AppendKey(%#v) = %q %v, KeyString %q %v", key, kb, bok, ks, kok)
		}
		row, res := tb.Get(ks, at)
		got, gres := tb.Field(kb, at, name)
		if res != gres || !reflect.DeepEqual(got, row[name]) {
			t.Fatalf("Field(%q, %d, %q) = %#v %v, Get's %#v %v", ks, at, name, got, gres, row[name], res)
		}
	})
}
