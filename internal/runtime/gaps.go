package runtime

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/sidestream/sidestream/internal/plan"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/metrics"
)

// InputGapError reports records of a consumed partition that the broker
// deleted before the router read them, under on_gap: fail. The task does
// not process; the gap stays until the group's offsets are moved past it
// (router reset) or the input's on_gap is skip.
type InputGapError struct {
	Gap metrics.Gap
}

func (e *InputGapError) Error() string {
	return fmt.Sprintf("topic %s partition %d: offsets %d to %d (%d offsets) were deleted by the broker before the router read them; "+
		"the task does not process (on_gap: fail; set on_gap: skip to count them and go on, or move the group's offsets with router reset)",
		e.Gap.Topic, e.Gap.Partition, e.Gap.From, e.Gap.To-1, e.Gap.Offsets())
}

// gapTracker knows, per consumed partition, the offset its next fetched
// record must have: the committed offset after an assignment or an
// abort, the last processed offset + 1 after a batch. A fetched
// partition whose first record is beyond it, with the log start also
// beyond it, lost [expected, min(log start, first record)): the client
// was below the log start and resumed there. Offsets between the log
// start and the first record are transaction markers, aborted records or
// compacted keys, never lost: they are not counted. A partition without
// a committed offset (a new group) has no expectation and no gap.
type gapTracker struct {
	mu   sync.Mutex
	next map[tp]int64
}

func newGapTracker() *gapTracker { return &gapTracker{next: map[tp]int64{}} }

// reset forgets everything (a new session).
func (g *gapTracker) reset() {
	g.mu.Lock()
	g.next = map[tp]int64{}
	g.mu.Unlock()
}

// seed sets the expectation of newly assigned partitions from the
// group's fetched offsets (the client's start offset, negative, for a
// partition without a commit).
func (g *gapTracker) seed(offsets map[string]map[int32]kgo.Offset) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for t, ps := range offsets {
		for p, o := range ps {
			if at := o.EpochOffset().Offset; at >= 0 {
				g.next[tp{t, p}] = at
			} else {
				delete(g.next, tp{t, p})
			}
		}
	}
}

// rewind resets every expectation to the committed offsets, after an
// aborted transaction rewound the client to them.
func (g *gapTracker) rewind(committed map[string]map[int32]kgo.EpochOffset) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.next {
		if eo, ok := committed[k.topic][k.partition]; ok && eo.Offset >= 0 {
			g.next[k] = eo.Offset
		} else {
			delete(g.next, k)
		}
	}
}

// forget drops revoked partitions.
func (g *gapTracker) forget(r map[string][]int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for t, ps := range r {
		for _, p := range ps {
			delete(g.next, tp{t, p})
		}
	}
}

// check returns the gap before a fetched partition's records, if any.
// It does not move the expectation: see advance.
func (g *gapTracker) check(ftp kgo.FetchTopicPartition) (metrics.Gap, bool) {
	if len(ftp.Records) == 0 {
		return metrics.Gap{}, false
	}
	g.mu.Lock()
	want, ok := g.next[tp{ftp.Topic, ftp.Partition}]
	g.mu.Unlock()
	first := ftp.Records[0].Offset
	if !ok || first <= want || ftp.LogStartOffset <= want {
		return metrics.Gap{}, false
	}
	return metrics.Gap{Topic: ftp.Topic, Partition: ftp.Partition, From: want, To: min(ftp.LogStartOffset, first)}, true
}

// advance sets the expectation after a processed batch of the partition.
func (g *gapTracker) advance(ftp kgo.FetchTopicPartition) {
	if len(ftp.Records) == 0 {
		return
	}
	g.mu.Lock()
	g.next[tp{ftp.Topic, ftp.Partition}] = ftp.Records[len(ftp.Records)-1].Offset + 1
	g.mu.Unlock()
}

// adjustFetchOffsets runs when the group has fetched the committed
// offsets of newly assigned partitions: it seeds the gap tracker and
// starts the partitions of start: latest inputs without a commit at the
// log end. (The client's start offset, the log start, serves the rest;
// its reset offset, used when a partition falls below the log start,
// stays the log start for every topic, so a gap loses the least.)
func (p *Processor) adjustFetchOffsets(_ context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	p.gaps.seed(offsets)
	for t, ps := range offsets {
		if p.top.InputStart(t) != plan.StartLatest {
			continue
		}
		for part, o := range ps {
			if o.EpochOffset().Offset < 0 {
				ps[part] = kgo.NewOffset().AtEnd()
				p.log.Info("new group: partition starts at the log end (start: latest)", "topic", t, "partition", part)
			}
		}
	}
	return offsets, nil
}

// inputGap handles a gap found before a fetched partition's records:
// under skip it is counted in the batch's tally (published, logged and
// shown with the commit that moves past it) and nil is returned; under
// fail the partition is not processed and the error stops the session.
func (p *Processor) inputGap(g metrics.Gap, tally *metrics.Tally) error {
	if p.top.GapPolicy(g.Topic) == plan.GapSkip {
		tally.AddGap(g)
		return nil
	}
	e := &InputGapError{Gap: g}
	p.m.InputGapStop.WithLabelValues(g.Topic, strconv.Itoa(int(g.Partition))).Set(1)
	p.obs.Gap(g, false)
	p.obs.SetGapStop(g, e.Error())
	p.log.Error("records deleted before they were read; the task does not process (on_gap: fail)",
		"topic", g.Topic, "partition", g.Partition, "from", g.From, "to", g.To-1, "offsets", g.Offsets())
	return e
}

// committedGaps publishes the gaps of a committed tally: the router has
// moved past them for good.
func (p *Processor) committedGaps(t *metrics.Tally) {
	for _, g := range t.Gaps {
		p.obs.Gap(g, true)
		p.log.Error("records deleted by the broker before they were read were skipped (on_gap: skip)",
			"topic", g.Topic, "partition", g.Partition, "from", g.From, "to", g.To-1, "offsets", g.Offsets())
	}
}
