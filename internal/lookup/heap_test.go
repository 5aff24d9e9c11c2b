//go:build !race

// Excluded from race builds: a race build's memory is not the table's;
// scripts/test.sh runs it without -race.

package lookup

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// heapOf is the heap that build's result holds: HeapAlloc after a
// collection, less before.
func heapOf(build func() *Table) (*Table, int64) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	t := build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return t, int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// benchRow is bench/lookup's row (and the throughput harness's): about
// 75 bytes of JSON, decoded as the loader decodes it.
func benchRow(i int) Row {
	r, err := Decode(fmt.Appendf(nil, `{"id":"s-%d","tier":"%s","region":"eu","since":%d}`, i, []string{"vip", "basic"}[i%2], 1789992000000+i))
	if err != nil {
		panic(err)
	}
	return r
}

// wideRow is a row of about 600 bytes of JSON, nested.
func wideRow(i int) Row {
	r, err := Decode(fmt.Appendf(nil, `{"id":%d,"name":"merchant %d of the north-east region","limits":{"daily":%d,"monthly":%d,"currency":"EUR"},`+
		`"tags":["retail","online","priority-%d","a","b","c"],"score":%d.25,"active":true,"notes":"%s"}`, i, i, i*10, i*300, i%7, i%100, strings.Repeat("x", 400+i%64)))
	if err != nil {
		panic(err)
	}
	return r
}

// The bytes a table estimates (Size, sidestream_table_bytes, what
// limits.max_bytes bounds) are the heap it holds, measured after a
// collection, within heapTolerance: the swiss map's load moves between
// 7/16 and 7/8 as it grows, which the estimate averages.
func TestHeapEstimate(t *testing.T) {
	const heapTolerance = 0.15
	cases := []struct {
		name  string
		spec  Spec
		n     int
		apply func(tb *Table, i int)
	}{
		{"current 10k", Spec{Mode: Current}, 10_000, func(tb *Table, i int) { tb.Apply(fmt.Sprintf("s-%d", i), 0, benchRow(i)) }},
		{"current 100k", Spec{Mode: Current}, 100_000, func(tb *Table, i int) { tb.Apply(fmt.Sprintf("s-%d", i), 0, benchRow(i)) }},
		{"current 300k", Spec{Mode: Current}, 300_000, func(tb *Table, i int) { tb.Apply(fmt.Sprintf("s-%d", i), 0, benchRow(i)) }},
		{"current wide 20k", Spec{Mode: Current}, 20_000, func(tb *Table, i int) { tb.Apply(fmt.Sprintf("m-%d", i), 0, wideRow(i)) }},
		// 1 to 8 versions a key, in time order.
		{"as_of 100k", Spec{Mode: AsOf, History: time.Hour}, 100_000, func(tb *Table, i int) {
			k := i / 8
			if i%8 <= k%8 {
				tb.Apply(fmt.Sprintf("s-%d", k), int64(i%8), benchRow(i))
			}
		}},
	}
	for _, c := range cases {
		tb, heap := heapOf(func() *Table {
			tb, err := New(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.n {
				c.apply(tb, i)
			}
			return tb
		})
		entries, est := tb.Size()
		ratio := float64(est) / float64(heap)
		t.Logf("%s: %d entries, estimate %d bytes (%.0f an entry), heap %d (%.0f): %.3f", c.name, entries, est,
			float64(est)/float64(entries), heap, float64(heap)/float64(entries), ratio)
		if ratio < 1-heapTolerance || ratio > 1+heapTolerance {
			t.Errorf("%s: the estimate is %.2f× the heap the table holds (%d bytes estimated, %d held)", c.name, ratio, est, heap)
		}
		runtime.KeepAlive(tb)
	}
}
