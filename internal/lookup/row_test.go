package lookup

import (
	"fmt"
	"math"
	"reflect"
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
