package stateful

import (
	"github.com/sidestream/sidestream/processor/statelimit"
	"github.com/sidestream/sidestream/topology"
)

// stateLimits is the operators' form of a route's limits block.
func stateLimits(l *topology.Limits) statelimit.Limits {
	if l == nil {
		return statelimit.Limits{}
	}
	sl := statelimit.Limits{MaxEntries: l.MaxEntries, MaxBytes: l.MaxBytes, Policy: statelimit.Route}
	if l.OnOverflow == topology.OverflowEvict {
		sl.Policy = statelimit.Evict
	}
	return sl
}
