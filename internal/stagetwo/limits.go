package stagetwo

import (
	"github.com/sidestream/sidestream/internal/operator/statelimit"
	"github.com/sidestream/sidestream/internal/plan"
)

// stateLimits is the operators' form of a route's limits block.
func stateLimits(l *plan.Limits) statelimit.Limits {
	if l == nil {
		return statelimit.Limits{}
	}
	sl := statelimit.Limits{MaxEntries: l.MaxEntries, MaxBytes: l.MaxBytes, Policy: statelimit.Route}
	if l.OnOverflow == plan.OverflowEvict {
		sl.Policy = statelimit.Evict
	}
	return sl
}
