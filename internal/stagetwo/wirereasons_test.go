package stagetwo

import (
	"testing"

	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/operator/window"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestOperatorReasonsAreTheWire: the window and assembly operators name
// their RecordError reasons themselves (they import nothing of the
// runtime); those reasons go on the dirty route as they are, so they must
// be the contract's.
func TestOperatorReasonsAreTheWire(t *testing.T) {
	for op, want := range map[string]string{
		window.ReasonEventTime:     wire.ReasonEventTimeRange,
		window.ReasonValueCount:    wire.ReasonValueCount,
		window.ReasonValueType:     wire.ReasonValueType,
		window.ReasonNonFinite:     wire.ReasonNonFinite,
		window.ReasonAggOverflow:   wire.ReasonAggOverflow,
		assembly.ReasonBadID:       wire.ReasonBadAssemblyID,
		assembly.ReasonUnknownPart: wire.ReasonUnknownPart,
		assembly.ReasonBadValue:    wire.ReasonBadPartValue,
	} {
		if op != want {
			t.Errorf("operator reason %q, the wire says %q", op, want)
		}
	}
}
