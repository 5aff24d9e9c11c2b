package sideroute

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// TestLedgerMatchesMap: any sequence of sets and deletes (tombstones)
// leaves the ledger answering exactly as a map of origins would, with its
// spans sorted, disjoint and merged wherever two neighbours share an entry.
func TestLedgerMatchesMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := newLedger()
		model := map[string]ledgerEntry{}
		origin := rapid.Custom(func(t *rapid.T) string {
			switch rapid.IntRange(0, 9).Draw(t, "kind") {
			case 0: // no origin: kept aside
				return rapid.SampledFrom([]string{"x", "a/b", "dirty/0/-1", "dirty/0/01", "/0/1", "dirty//1"}).Draw(t, "junk")
			default:
				return "dirty/" + strconv.Itoa(rapid.IntRange(0, 2).Draw(t, "part")) + "/" + strconv.Itoa(rapid.IntRange(0, 40).Draw(t, "off"))
			}
		})
		entry := rapid.Custom(func(t *rapid.T) ledgerEntry {
			return ledgerEntry{Run: rapid.SampledFrom([]string{"r1", "r2"}).Draw(t, "run"), To: "logs", At: int64(rapid.IntRange(1, 2).Draw(t, "at"))}
		})
		for range rapid.IntRange(0, 200).Draw(t, "ops") {
			o := origin.Draw(t, "origin")
			if rapid.IntRange(0, 3).Draw(t, "op") == 0 {
				l.del(o)
				delete(model, o)
			} else {
				e := entry.Draw(t, "entry")
				l.set(o, e)
				model[o] = e
			}
		}
		for p := range 3 {
			for off := range 42 {
				o := fmt.Sprintf("dirty/%d/%d", p, off)
				got, ok := l.get(o)
				want, wok := model[o]
				if ok != wok || got != want {
					t.Fatalf("%s: ledger (%v, %+v), map (%v, %+v)", o, ok, got, wok, want)
				}
			}
		}
		for o, want := range model {
			if got, ok := l.get(o); !ok || got != want {
				t.Fatalf("%s: ledger (%v, %+v), map %+v", o, ok, got, want)
			}
		}
		for part, s := range l.parts {
			for i, sp := range s.s {
				if sp.lo > sp.hi || i > 0 && (s.s[i-1].hi >= sp.lo || s.s[i-1].hi+1 == sp.lo && s.s[i-1].e == sp.e) {
					t.Fatalf("%s: spans %+v not sorted, disjoint and merged", part, s.s)
				}
			}
		}
	})
}

// BenchmarkLedgerMemory: the heap a redrive holds for a ledger of one run
// over 1,000,000 consecutive records of one partition, against a map of
// one entry per origin (what the ledger was before).
func BenchmarkLedgerMemory(b *testing.B) {
	const n = 1_000_000
	e := ledgerEntry{Run: "redrive-20261201T000000Z", To: "logs", At: 1}
	heap := func(fill func() any) float64 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		keep := fill()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return float64(after.HeapAlloc) - float64(before.HeapAlloc)
	}
	b.Run("spans", func(b *testing.B) {
		var bytes float64
		for b.Loop() {
			bytes = heap(func() any {
				l := newLedger()
				for off := range n {
					l.set("app.dirty/3/"+strconv.Itoa(off), e)
				}
				return l
			})
		}
		b.ReportMetric(bytes/n, "heapB/entry")
	})
	b.Run("map", func(b *testing.B) {
		var bytes float64
		for b.Loop() {
			bytes = heap(func() any {
				m := map[string]ledgerEntry{}
				for off := range n {
					m["app.dirty/3/"+strconv.Itoa(off)] = e
				}
				return m
			})
		}
		b.ReportMetric(bytes/n, "heapB/entry")
	})
}
