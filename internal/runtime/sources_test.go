package runtime

import (
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/sidestream/sidestream/internal/operator/window"
)

// TestOffsetMeta: what a commit writes reads back (progress and state
// witnesses), and any other metadata (another client's, junk) reads as
// neither, never a panic.
func TestOffsetMeta(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.OneOf(rapid.Just(int64(math.MinInt64)), rapid.Int64Range(window.MinEventTime, window.MaxEventTime)).Draw(t, "max")
		state := rapid.SliceOfDistinct(rapid.StringMatching(`[a-z][a-z0-9_-]{0,20}`), rapid.ID).Draw(t, "state")
		gotMax, gotState := decodeOffsetMeta(encodeOffsetMeta(max, state))
		if gotMax != max || !slices.Equal(gotState, state) {
			t.Fatalf("round trip of (%d, %q) gave (%d, %q)", max, state, gotMax, gotState)
		}
		junk := rapid.String().Draw(t, "junk")
		if m, _ := decodeOffsetMeta(junk); m != math.MinInt64 && (m < window.MinEventTime || m > window.MaxEventTime) {
			t.Fatalf("%q decoded to progress %d, out of range", junk, m)
		}
	})
	if m, s := decodeOffsetMeta(`{"max_event_time":99999999999999999}`); m != math.MinInt64 || s != nil {
		t.Fatalf("out-of-range progress decoded to (%d, %q)", m, s)
	}
}

// TestSourceTrackerWitness: a held direct task is written into the
// metadata of every input partition of its number, and only those; a
// drop of the partition or a release forgets it.
func TestSourceTrackerWitness(t *testing.T) {
	s := newSourceTracker()
	for _, k := range []tp{{"a", 0}, {"a", 1}, {"b", 1}} {
		s.parts[k] = &srcProgress{max: math.MinInt64, sent: math.MinInt64}
	}
	s.hold("rep-x", 1, "x")
	s.hold("rep-w", 1, "w")
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	for _, topic := range []string{"a", "b", "repartition"} {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		for _, p := range []int32{0, 1} {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if err := s.commitMeta(req); err != nil {
		t.Fatal(err)
	}
	got := map[tp]string{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if rp.Metadata != nil {
				got[tp{rt.Topic, rp.Partition}] = *rp.Metadata
			}
		}
	}
	want := map[tp]string{{"a", 1}: `{"state":["w","x"]}`, {"b", 1}: `{"state":["w","x"]}`}
	if len(got) != len(want) || got[tp{"a", 1}] != want[tp{"a", 1}] || got[tp{"b", 1}] != want[tp{"b", 1}] {
		t.Fatalf("metadata %q, want %q", got, want)
	}
	s.release("rep-w", 1)
	s.drop(map[string][]int32{"rep-x": {1}})
	if s.holds("rep-w", 1) || s.holds("rep-x", 1) {
		t.Fatal("a released or dropped task still holds state")
	}
	if m := s.meta("a", 1); m != nil {
		t.Fatalf("metadata %q after release and drop, want none", *m)
	}
}
