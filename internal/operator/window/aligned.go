package window

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Aligned watermarks: the operator reads records that several sources
// (input partitions) wrote into one stream, interleaved by chance. A
// watermark taken as the maximum over that stream would make lateness
// depend on which source happened to deliver first. In aligned mode:
//
//   - each source's progress is its maximum event time, carried by its
//     records and by marks (ProcessAligned, Mark), and kept in the store
//     under "s" src, so it survives a restore;
//   - the task's watermark is the minimum over every expected source
//     (SetSources) minus max_out_of_orderness: windows fire and purge only
//     when every source has passed them, and a source not heard from yet
//     holds them;
//   - a record is late, and skips a purged window, by the watermark its own
//     source had when the record was written: deterministic, since each
//     source's stream is in order.
//
// A record not late by its source's watermark always finds its windows
// still open (the task's watermark is never above any source's), and a
// window is purged only after every source's records for it arrived, so
// for tumbling and hopping windows the final results and the late set do
// not depend on the interleaving. Session windows keep one caveat: a
// record inside a session that its source already passed merges into
// that session if it is still open (another source holds the watermark),
// and is late otherwise.
const nsSource = 's'

var sourcePrefix = []byte{nsSource}

func appendSourceKey(b []byte, src string) []byte {
	return appendKey(append(b, nsSource), src)
}

// loadSources reads the sources' progress from the store.
func (o *Operator) loadSources() error {
	var rerr error
	err := o.st.Range(sourcePrefix, func(k, v []byte) bool {
		src, rest, ok := readKey(k[1:])
		m, n := binary.Varint(v)
		if !ok || len(rest) != 0 || n <= 0 || n != len(v) {
			rerr = fmt.Errorf("%w: source progress %x=%x", errCorrupt, k, v)
			return false
		}
		if o.srcs == nil {
			o.srcs = map[string]int64{}
		}
		o.srcs[src] = m
		return true
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("window: read source progress: %w", err)
	}
	o.lowOK = false
	return nil
}

// SetSources names every source the watermark waits for. A source seen
// in a record or mark but not named here (a partition added later) is
// waited for too, from then on.
func (o *Operator) SetSources(ids []string) {
	o.expected = slices.Clone(ids)
	o.lowOK = false
}

// Sources returns each known source's maximum event time.
func (o *Operator) Sources() map[string]int64 {
	out := make(map[string]int64, len(o.srcs))
	for s, m := range o.srcs {
		out[s] = m
	}
	return out
}

// HeldBy names the source holding the watermark back (the one with the
// lowest progress, or one not heard from yet) and its maximum event time
// (math.MinInt64 when not heard from), or "" before SetSources and any
// source.
func (o *Operator) HeldBy() (string, int64) {
	low, src := o.lowest()
	return src, low
}

// lowest is the minimum progress over expected and known sources that
// are not idle, and the source that has it. When every source is idle it
// is the minimum over those that made progress: an all-quiet task keeps
// what its sources reached.
func (o *Operator) lowest() (int64, string) {
	low, held := int64(math.MaxInt64), ""
	idleLow, idleHeld := int64(math.MaxInt64), ""
	for s, m := range o.srcs {
		if o.idle[s] && (m < idleLow || (m == idleLow && s < idleHeld)) {
			idleLow, idleHeld = m, s
		}
	}
	for _, s := range o.expected {
		if o.idle[s] {
			continue
		}
		m, ok := o.srcs[s]
		if !ok {
			return math.MinInt64, s
		}
		if m < low || (m == low && s < held) {
			low, held = m, s
		}
	}
	for s, m := range o.srcs {
		if o.idle[s] {
			continue
		}
		if m < low || (m == low && s < held) {
			low, held = m, s
		}
	}
	switch {
	case held != "":
		return low, held
	case idleHeld != "":
		return idleLow, idleHeld
	}
	return math.MinInt64, ""
}

// SetIdle leaves a source out of the minimum (idle, by the caller's
// wall clock: the one place timing enters, see idle_timeout) or takes it
// back in. Leaving one out may advance the watermark; taking one back in
// never lowers it. With every source idle the watermark is the minimum
// over the sources that made progress.
func (o *Operator) SetIdle(src string, idle bool) (Output, error) {
	var out Output
	if o.idle[src] == idle {
		return out, nil
	}
	if o.idle == nil {
		o.idle = map[string]bool{}
	}
	if idle {
		o.idle[src] = true
	} else {
		delete(o.idle, src)
	}
	low, _ := o.lowest()
	o.low, o.lowOK = low, true
	if low == math.MinInt64 {
		return out, nil
	}
	err := o.advance(min(low-o.p.ooo, maxWatermark), &out)
	sortResults(out.Results)
	return out, err
}

// Idle reports whether SetIdle left src out.
func (o *Operator) Idle(src string) bool { return o.idle[src] }

// Expected is what SetSources named.
func (o *Operator) Expected() []string { return o.expected }

// ProcessAligned is Process for a record of source src whose maximum
// event time before this record was srcMax (math.MinInt64 when it had
// none): the record's lateness is judged by that source's watermark (and
// never below the task's), then the source's progress is raised by the
// record and the task's watermark advanced to the minimum over sources.
func (o *Operator) ProcessAligned(src, key string, eventTime int64, vals []any, srcMax int64) (Output, error) {
	judge := o.wm
	if srcMax != math.MinInt64 {
		judge = max(judge, srcMax-o.p.ooo)
	}
	out, err := o.apply1(key, eventTime, vals, judge)
	if err != nil {
		return out, err
	}
	reach := eventTime
	if srcMax != math.MinInt64 {
		reach = max(reach, srcMax)
	}
	if err := o.mark(src, reach, &out); err != nil {
		return out, err
	}
	sortResults(out.Results)
	return out, nil
}

// Mark records that source src has seen event times up to maxEventTime
// and advances the watermark to the minimum over sources minus
// max_out_of_orderness, firing and purging what is due. A mark at or
// below what the source already reached changes nothing. maxEventTime
// must lie in [MinEventTime, MaxEventTime].
func (o *Operator) Mark(src string, maxEventTime int64) (Output, error) {
	if maxEventTime < MinEventTime || maxEventTime > MaxEventTime {
		return Output{}, &RecordError{Reason: ReasonEventTime, Detail: fmt.Sprintf("source mark %d is outside [%d, %d]", maxEventTime, MinEventTime, MaxEventTime)}
	}
	var out Output
	if err := o.mark(src, maxEventTime, &out); err != nil {
		return out, err
	}
	sortResults(out.Results)
	return out, nil
}

func (o *Operator) mark(src string, m int64, out *Output) error {
	cur, had := o.srcs[src]
	if had && cur >= m {
		return nil
	}
	if o.srcs == nil {
		o.srcs = map[string]int64{}
	}
	o.srcs[src] = m
	if err := o.writeSource(src, m); err != nil {
		return err
	}
	if had && o.lowOK && cur > o.low {
		return nil // it did not hold the minimum: the minimum stands
	}
	low, _ := o.lowest()
	o.low, o.lowOK = low, true
	if low == math.MinInt64 {
		return nil
	}
	return o.advance(min(low-o.p.ooo, maxWatermark), out)
}
