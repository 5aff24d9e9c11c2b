package window

import (
	"testing"

	"github.com/sidestream/sidestream/internal/aggfn"
)

// The operator's kinds are aggfn's names, one for one: a name added to
// aggfn without a kind here (or a kind without a name) fails, and each
// kind keeps its name.
func TestAggKindsAreAggfnNames(t *testing.T) {
	kinds := map[AggKind]string{
		Count: aggfn.Count, Sum: aggfn.Sum, Min: aggfn.Min, Max: aggfn.Max, Avg: aggfn.Avg,
		First: aggfn.First, Last: aggfn.Last, DistinctCount: aggfn.DistinctCount,
	}
	if len(aggfn.Names) != int(DistinctCount) || len(kinds) != len(aggfn.Names) {
		t.Fatalf("aggfn names %d functions, the operator has %d kinds (the last is %d)", len(aggfn.Names), len(kinds), DistinctCount)
	}
	for k, name := range kinds {
		if k.String() != name {
			t.Errorf("kind %d is named %q, want %q", k, k.String(), name)
		}
		if got, err := ParseAggKind(name); err != nil || got != k {
			t.Errorf("ParseAggKind(%q) = %v, %v; want %v", name, got, err, k)
		}
	}
	if _, err := ParseAggKind("median"); err == nil {
		t.Error("ParseAggKind accepts a name aggfn does not have")
	}
}
