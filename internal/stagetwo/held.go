package stagetwo

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/wire"

	"github.com/sidestream/sidestream/internal/plan"
)

// HeldError is a task's build meeting state written under another spec
// (a breaking change, internal/plan/diff.go): the route cannot run on it.
// The runtime holds the route (its repartition topic is not consumed,
// nothing of it is committed) instead of failing the session, and every
// other route goes on.
type HeldError struct {
	Route string
	// Topic is the route's repartition topic (the name its tasks are
	// known by when Direct).
	Topic     string
	Partition int32
	Direct    bool
	// Stored is the spec description the state holds (nil: written by an
	// older version, which kept only a hash); Now the route's.
	Stored, Now []byte
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("route %q partition %d: its state was written with a different spec: %s", e.Route, e.Partition, e.Difference())
}

// Difference says what differs between the stored spec and the route's.
func (e *HeldError) Difference() string { return plan.DiffStateSpec(e.Stored, e.Now) }

// storedSpec is what both operators' SpecChangedError offer.
type storedSpec interface{ StoredSpec() []byte }

// heldError is err as a *HeldError when it is an operator's refusal of
// state written under another spec, else nil.
func heldError(err error, route, topic string, part int32, direct bool, now []byte) *HeldError {
	var sc storedSpec
	if !errors.As(err, &sc) {
		return nil
	}
	return &HeldError{Route: route, Topic: topic, Partition: part, Direct: direct, Stored: sc.StoredSpec(), Now: now}
}

// withStateVersion adds the route's state version header to one of its
// results (a route with state_version 0 writes none).
func withStateVersion(rt *plan.RouteNode, r *kgo.Record) *kgo.Record {
	if rt.StateVersion == 0 {
		return r
	}
	r.Headers = append(r.Headers[:len(r.Headers):len(r.Headers)], kgo.RecordHeader{Key: wire.HeaderStateVersion, Value: strconv.AppendInt(nil, int64(rt.StateVersion), 10)})
	return r
}
