package lookup

import (
	"fmt"
	"hash/maphash"
	"testing"

	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

// A current table's index (index.go) answers as a plain map would, over
// random sequences of rows, deletes and limits refusing new keys, and
// keeps its own invariants: one slot an entry, each slot reachable from
// its home without crossing an empty slot, sizes that add up.
func TestIndexAgreesWithMap(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		maxEntries := rapid.IntRange(0, 40).Draw(rt, "max_entries")
		spec := Spec{Mode: Current}
		if maxEntries > 0 {
			spec.Limits = statelimit.Limits{MaxEntries: maxEntries, Policy: statelimit.Route}
		}
		tb, err := New(spec)
		if err != nil {
			rt.Fatal(err)
		}
		model := map[string]Row{}
		nkeys := rapid.IntRange(1, 120).Draw(rt, "keys")
		for i := range rapid.IntRange(0, 400).Draw(rt, "ops") {
			key := fmt.Sprint("k", rapid.IntRange(0, nkeys-1).Draw(rt, "key"))
			var row Row
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0: // a tombstone
			case 1: // a row kept as its map
				row = Row{"id": i, "odd": struct{}{}}
			default:
				row = Row{"id": i, "tier": fmt.Sprint("t", i%3)}
			}
			_, known := model[key]
			admitted := tb.Apply(key, 0, row)
			switch {
			case row == nil:
				delete(model, key)
			case known || maxEntries == 0 || len(model) < maxEntries:
				model[key] = row
				if !admitted {
					rt.Fatalf("op %d: %s refused with %d of %d entries", i, key, len(model), maxEntries)
				}
			case admitted:
				rt.Fatalf("op %d: %s admitted past %d entries", i, key, maxEntries)
			}
			checkIndex(rt, tb, model, nkeys)
		}
	})
}

func checkIndex(t *rapid.T, tb *Table, model map[string]Row, nkeys int) {
	for k := range nkeys {
		key := fmt.Sprint("k", k)
		got, res := tb.Get(key, 0)
		want := model[key]
		if (res == Hit) != (want != nil) || rowID(got) != rowID(want) {
			t.Fatalf("Get(%s): %v %v, want %v", key, rowID(got), res, rowID(want))
		}
		f, res := tb.Field([]byte(key), 0, "id")
		if (res == Hit) != (want != nil) || (want != nil && f != want["id"]) {
			t.Fatalf("Field(%s, id): %v %v, want %v", key, f, res, want["id"])
		}
	}
	ix := &tb.cur
	if ix.len() != len(model) {
		t.Fatalf("%d entries, want %d", ix.len(), len(model))
	}
	var bytes int64
	used, trees := 0, 0
	mask := uint32(len(ix.slots) - 1)
	for p, s := range ix.slots {
		if s.hash == 0 {
			continue
		}
		used++
		key := s.data[:s.klen]
		if s.hash != uint32(maphash.String(ix.seed, key))|usedBit || ix.get(key) != p {
			t.Fatalf("slot %d (%s): hash %x, found at %d", p, key, s.hash, ix.get(key))
		}
		for q := s.hash & mask; q != uint32(p); q = (q + 1) & mask {
			if ix.slots[q].hash == 0 {
				t.Fatalf("slot %d: an empty slot %d between it and its home", p, q)
			}
		}
		e := ix.at(p)
		if (e.tree != nil) != (int(s.klen) == len(s.data)) {
			t.Fatalf("slot %d (%s): tree %v", p, key, e.tree)
		}
		if e.tree != nil {
			trees++
		}
		bytes += e.size
	}
	if used != len(model) || trees != len(ix.trees) {
		t.Fatalf("%d slots used, %d trees (%d kept), want %d", used, trees, len(ix.trees), len(model))
	}
	bytes += int64(len(ix.slots)) * slotSize
	if n, b := tb.Size(); n != len(model) || b != bytes {
		t.Fatalf("Size %d %d, entries %d %d", n, b, len(model), bytes)
	}
}
