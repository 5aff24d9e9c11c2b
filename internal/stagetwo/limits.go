package stagetwo

import (
	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/operator/statelimit"
)

// stateLimits is the operators' form of a route's limits block.
func stateLimits(l *config.Limits) statelimit.Limits {
	if l == nil {
		return statelimit.Limits{}
	}
	sl := statelimit.Limits{MaxEntries: l.MaxEntries, MaxBytes: l.MaxBytes, Policy: statelimit.Route}
	if l.OnOverflow == config.OverflowEvict {
		sl.Policy = statelimit.Evict
	}
	return sl
}
