package changelog_test

import (
	"fmt"
	"testing"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/changelog/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) changelog.Store { return changelog.NewMemory() })
}

func TestMemoryBuilder(t *testing.T) {
	b := changelog.MemoryBuilder()
	s1, err := b("orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := b("orders", 1)
	if err := s1.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if s2.Len() != 0 {
		t.Fatal("partitions share a store")
	}
}

// TestMemoryManyKeys drives the chunked index through splits and merges:
// ascending, descending and interleaved inserts and deletes.
func TestMemoryManyKeys(t *testing.T) {
	m := changelog.NewMemory()
	const n = 20000
	for i := range n {
		j := (i * 7919) % n // a permutation of 0..n-1
		if err := m.Set(fmt.Appendf(nil, "%06d", j), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 2 {
		if err := m.Delete(fmt.Appendf(nil, "%06d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if m.Len() != n/2 {
		t.Fatalf("Len %d", m.Len())
	}
	prev, count := "", 0
	_ = m.Range(nil, func(k, _ []byte) bool {
		if string(k) <= prev && count > 0 {
			t.Fatalf("out of order: %q after %q", k, prev)
		}
		var v int
		fmt.Sscanf(string(k), "%d", &v)
		if v%2 == 0 {
			t.Fatalf("deleted key %q still present", k)
		}
		prev = string(k)
		count++
		return true
	})
	if count != n/2 {
		t.Fatalf("ranged %d", count)
	}
	for i := 1; i < n; i += 2 {
		_ = m.Delete(fmt.Appendf(nil, "%06d", i))
	}
	if m.Len() != 0 || m.SizeBytes() != 0 {
		t.Fatalf("Len %d Size %d after deleting all", m.Len(), m.SizeBytes())
	}
}

func BenchmarkMemorySet(b *testing.B) {
	m := changelog.NewMemory()
	key := make([]byte, 16)
	val := make([]byte, 64)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := fmt.Appendf(key[:0], "k%012d", (i*7919)%100000)
		_ = m.Set(k, val)
		if i%1000 == 0 {
			m.ResetChanges()
		}
	}
}
