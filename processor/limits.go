package processor

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/processor/statelimit"
	"github.com/sidestream/sidestream/topology"
	"github.com/sidestream/sidestream/wire"
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

// overflowRecord is the repartitioned record, value unchanged, on the
// route's overflow route, keyed by its source key, with the limit it met.
// The stage-one headers (source topic, partition, offset, event time)
// stay, so tail shows where it came from and redrive can replay it.
func overflowRecord(rt *topology.RouteNode, r *kgo.Record, key []byte, limit string, maxv, size int64) *kgo.Record {
	hs := make([]kgo.RecordHeader, 0, len(r.Headers)+4)
	hs = append(hs, r.Headers...)
	hs = append(hs,
		kgo.RecordHeader{Key: wire.HeaderOverflowRoute, Value: []byte(rt.Name)},
		kgo.RecordHeader{Key: wire.HeaderOverflowLimit, Value: []byte(limit)},
		kgo.RecordHeader{Key: wire.HeaderOverflowMax, Value: []byte(strconv.FormatInt(maxv, 10))},
		kgo.RecordHeader{Key: wire.HeaderOverflowSize, Value: []byte(strconv.FormatInt(size, 10))},
	)
	return &kgo.Record{Topic: rt.OverflowTopic(), Key: key, Value: r.Value, Headers: hs, Timestamp: r.Timestamp}
}
