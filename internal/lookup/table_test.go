package lookup

import (
	"fmt"
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

// applied is one row as the oracle keeps it: the whole history, never
// pruned.
type applied struct {
	key string
	at  int64
	row Row
}

// oracle answers a lookup from the whole history: the versions of key
// by time (the later applied of one time wins), the horizon the latest
// time applied less the history.
func oracle(hist []applied, history int64, key string, at int64) (Row, Result) {
	maxTime := int64(math.MinInt64)
	for _, a := range hist {
		maxTime = max(maxTime, a.at)
	}
	valid := func(t int64) (applied, bool) {
		var best applied
		found := false
		for _, a := range hist {
			if a.key == key && a.at <= t && (!found || a.at >= best.at) {
				best, found = a, true
			}
		}
		return best, found
	}
	h := maxTime - history
	if at >= h {
		v, ok := valid(at)
		if !ok || v.row == nil {
			return nil, Miss
		}
		return v.row, Hit
	}
	v, ok := valid(h)
	switch {
	case !ok || v.row == nil:
		return nil, Miss
	case v.at <= at:
		return v.row, Hit
	}
	return v.row, TooOld
}

func rowID(r Row) any {
	if r == nil {
		return nil
	}
	return r["id"]
}

// As-of lookups equal the oracle over the whole history, whatever the
// order rows come in, however pruning ran; memory holds no more than
// the versions a lookup can still read.
func TestAsOfOracle(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		rapid.Check(t, func(rt *rapid.T) { asOfOracle(rt, open) })
	})
}

func asOfOracle(t *rapid.T, open opener) {
	{
		history := rapid.Int64Range(1, 50).Draw(t, "history")
		tb := open(t, Spec{Mode: AsOf, History: time.Duration(history) * time.Millisecond})
		defer tb.close()
		var hist []applied
		keys := []string{"a", "b", "c"}
		// Each key's versions come in time order, as a changelog writes
		// them; across keys, in any order.
		last := map[string]int64{}
		for _, k := range keys {
			last[k] = rapid.Int64Range(0, 100).Draw(t, "start")
		}
		for i := range rapid.IntRange(1, 120).Draw(t, "ops") {
			key := rapid.SampledFrom(keys).Draw(t, "key")
			if rapid.IntRange(0, 2).Draw(t, "op") > 0 {
				at := last[key] + rapid.Int64Range(0, 8).Draw(t, "step")
				last[key] = at
				var row Row
				if rapid.IntRange(0, 4).Draw(t, "tomb") > 0 {
					row = Row{"id": i}
				}
				tb.apply(key, at, row)
				hist = append(hist, applied{key, at, row})
				continue
			}
			if rapid.IntRange(0, 9).Draw(t, "restart") == 0 {
				tb = tb.restart(t)
			}
			at := rapid.Int64Range(0, 300).Draw(t, "at")
			got, gr := tb.Get(key, at)
			want, wr := oracle(hist, history, key, at)
			if gr != wr || rowID(got) != rowID(want) {
				t.Fatalf("Get(%s, %d) after %d rows: %v %v, oracle %v %v", key, at, len(hist), rowID(got), gr, rowID(want), wr)
			}
		}
		for _, key := range keys {
			for at := int64(-5); at <= 1300; at++ {
				got, gr := tb.Get(key, at)
				want, wr := oracle(hist, history, key, at)
				if gr != wr || rowID(got) != rowID(want) {
					t.Fatalf("final Get(%s, %d): %v %v, oracle %v %v", key, at, rowID(got), gr, rowID(want), wr)
				}
			}
		}
		entries, bytes := tb.Size()
		n, b := 0, int64(0)
		for k, vs := range tb.keys {
			n += len(vs)
			b += keyCost(k)
			for _, v := range vs {
				b += v.size
			}
		}
		if entries != n || bytes != b {
			t.Fatalf("Size %d %d, kept %d %d", entries, bytes, n, b)
		}
		tb.checkStored(t)
	}
}

// Current mode: the latest row of each key in the topic's order; a
// tombstone deletes; the sizes follow.
func TestCurrent(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		rapid.Check(t, func(rt *rapid.T) { current(rt, open) })
	})
}

func current(t *rapid.T, open opener) {
	{
		tb := open(t, Spec{Mode: Current})
		defer tb.close()
		want := map[string]Row{}
		for i := range rapid.IntRange(0, 100).Draw(t, "ops") {
			key := fmt.Sprint(rapid.IntRange(0, 5).Draw(t, "key"))
			var row Row
			if rapid.Bool().Draw(t, "row") {
				row = Row{"id": i}
				want[key] = row
			} else {
				delete(want, key)
			}
			tb.apply(key, rapid.Int64().Draw(t, "at"), row)
			if rapid.IntRange(0, 9).Draw(t, "restart") == 0 {
				tb = tb.restart(t)
			}
		}
		for k := range 6 {
			key := fmt.Sprint(k)
			got, r := tb.Get(key, 0)
			if rowID(got) != rowID(want[key]) || (r == Hit) != (want[key] != nil) {
				t.Fatalf("Get(%s): %v %v, want %v", key, rowID(got), r, rowID(want[key]))
			}
		}
		var b int64
		for k, r := range want {
			var n names
			enc, _ := encodeRow(nil, &n, r)
			b += currentCost(len(k)+len(enc), nil)
		}
		b += tb.cur.bytes(len(want))
		if n, got := tb.Size(); n != len(want) || got != b {
			t.Fatalf("Size %d %d for %d keys (%d bytes)", n, got, len(want), b)
		}
		tb.checkStored(t)
	}
}

// Past a limit a new key is refused and counted; a kept key still
// updates; a delete makes room. On both stores, across restarts.
func TestLimits(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		tb := open(t, Spec{Mode: Current, Limits: statelimit.Limits{MaxEntries: 2, Policy: statelimit.Route}})
		defer tb.close()
		for _, k := range []string{"a", "b"} {
			if !tb.apply(k, 0, Row{"id": k}) {
				t.Fatalf("%s refused", k)
			}
		}
		tb = tb.restart(t)
		if tb.apply("c", 0, Row{"id": "c"}) || tb.Refused() != 1 {
			t.Fatal("c admitted past max_entries")
		}
		if !tb.apply("a", 0, Row{"id": "a2"}) {
			t.Fatal("an update of a kept key refused")
		}
		if r, _ := tb.Get("a", 0); r["id"] != "a2" {
			t.Fatalf("a: %v", r)
		}
		tb.apply("b", 0, nil)
		tb = tb.restart(t)
		if !tb.apply("c", 0, Row{"id": "c"}) {
			t.Fatal("c refused after a delete made room")
		}
		tb.checkStored(t)
		// {} encodes in 2 bytes: a (1 byte key) costs 8+80 and 8+56,
		// b would cost as much more.
		bt := open(t, Spec{Mode: AsOf, History: time.Hour, Limits: statelimit.Limits{MaxBytes: 200, Policy: statelimit.Route}})
		defer bt.close()
		if !bt.apply("a", 1, Row{}) {
			t.Fatal("max_bytes: the first key refused")
		}
		bt = bt.restart(t)
		if bt.apply("b", 1, Row{}) {
			t.Fatal("max_bytes: the second key fits after a restart")
		}
	})
}

func TestDecodeAndKeys(t *testing.T) {
	r, err := Decode([]byte(`{"id":"m1","tier":"vip","n":3,"f":1.5,"big":12345678901234567890}`))
	if err != nil || r["tier"] != "vip" || r["n"] != 3 || r["f"] != 1.5 {
		t.Fatalf("%v %v", r, err)
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"a":1} {}`, `{`, ``} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
	for k, want := range map[any]string{"m1": "m1", 42: "42", int64(-7): "-7", 3.0: "3", true: "true"} {
		if got, ok := KeyString(k); !ok || got != want {
			t.Errorf("KeyString(%v) = %q %v", k, got, ok)
		}
	}
	for _, k := range []any{nil, 1.5, map[string]any{}, []any{}} {
		if _, ok := KeyString(k); ok {
			t.Errorf("KeyString(%v) ok", k)
		}
	}
}
