package processor

import (
	"github.com/twmb/franz-go/pkg/kgo"

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

// bufferOpts bound the client's fetch and produce buffers (the client
// section); a zero field keeps franz-go's default.
func bufferOpts(c topology.Client) []kgo.Opt {
	var o []kgo.Opt
	if c.FetchMaxBytes > 0 {
		o = append(o, kgo.FetchMaxBytes(c.FetchMaxBytes))
	}
	if c.FetchMaxPartitionBytes > 0 {
		o = append(o, kgo.FetchMaxPartitionBytes(c.FetchMaxPartitionBytes))
	}
	if c.MaxConcurrentFetches > 0 {
		o = append(o, kgo.MaxConcurrentFetches(c.MaxConcurrentFetches))
	}
	if c.MaxBufferedRecords > 0 {
		o = append(o, kgo.MaxBufferedRecords(c.MaxBufferedRecords))
	}
	if c.MaxBufferedBytes > 0 {
		o = append(o, kgo.MaxBufferedBytes(c.MaxBufferedBytes))
	}
	return o
}
