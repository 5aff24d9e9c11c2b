package objective

import "time"

// Window is the sliding window of counts one objective is judged over.
// Its unit is a committed interval (a commit): each Add is one commit's
// counts of bad records among total records, at the commit's time; each
// AddLag one commit's records and the event-time lag of its newest one.
//
//   - Over a number of records (Records = N): the window holds the newest
//     commits, the oldest dropped while the others still hold at least N
//     records; so it is the shortest run of newest commits holding N
//     records or more (all of them while fewer were seen).
//   - Over a time span (Span = D): the window holds the commits made in
//     the last D, (now-D, now].
//
// Counts within one commit have no order (its partitions run in
// parallel), so a commit is never split: a records window holds between
// N and N + (its oldest commit's records - 1) records.
type Window struct {
	records int
	span    time.Duration
	buckets []bucket // oldest first
	bad     int64
	total   int64
	// seq numbers the buckets added; lags holds, oldest first, the
	// buckets that are the largest lag of some suffix of the window (a
	// monotonic queue: each lag larger than every lag after it), so the
	// window's largest lag is lags[0], kept in O(1) amortized per add.
	seq  int64
	lags []lagAt
}

type bucket struct {
	at         time.Time
	bad, total int64
	seq        int64
}

type lagAt struct {
	seq int64
	lag time.Duration
}

// NewWindow returns an empty window over records records, or over span
// when records is 0.
func NewWindow(records int, span time.Duration) *Window {
	return &Window{records: records, span: span}
}

// Add adds one commit's counts at time at (commits come in time order);
// a commit without records changes nothing.
func (w *Window) Add(at time.Time, bad, total int64) {
	w.add(bucket{at: at, bad: bad, total: total}, 0, false)
}

// AddLag adds one commit of total records at time at whose newest record
// (by event time) lagged lag behind at; a commit without records changes
// nothing.
func (w *Window) AddLag(at time.Time, total int64, lag time.Duration) {
	w.add(bucket{at: at, total: total}, lag, true)
}

func (w *Window) add(b bucket, lag time.Duration, lagged bool) {
	if b.total <= 0 {
		return
	}
	w.seq++
	b.seq = w.seq
	w.buckets = append(w.buckets, b)
	w.bad += b.bad
	w.total += b.total
	if lagged {
		for len(w.lags) > 0 && w.lags[len(w.lags)-1].lag <= lag {
			w.lags = w.lags[:len(w.lags)-1]
		}
		w.lags = append(w.lags, lagAt{seq: b.seq, lag: lag})
	}
	if w.records > 0 {
		for len(w.buckets) > 1 && w.total-w.buckets[0].total >= int64(w.records) {
			w.drop()
		}
		return
	}
	w.expire(b.at)
}

// expire drops the commits older than the span at now.
func (w *Window) expire(now time.Time) {
	if w.records > 0 {
		return
	}
	for len(w.buckets) > 0 && !w.buckets[0].at.After(now.Add(-w.span)) {
		w.drop()
	}
}

func (w *Window) drop() {
	b := w.buckets[0]
	w.bad -= b.bad
	w.total -= b.total
	w.buckets[0] = bucket{}
	w.buckets = w.buckets[1:]
	if len(w.lags) > 0 && w.lags[0].seq <= b.seq {
		w.lags = w.lags[1:]
	}
}

// Counts returns the bad and total records the window holds at now.
func (w *Window) Counts(now time.Time) (bad, total int64) {
	w.expire(now)
	return w.bad, w.total
}

// Share is bad / total at now, 0 for an empty window.
func (w *Window) Share(now time.Time) float64 {
	bad, total := w.Counts(now)
	if total == 0 {
		return 0
	}
	return float64(bad) / float64(total)
}

// MaxLag is the largest lag of the commits the window holds at now (of
// those added with AddLag), 0 for an empty window.
func (w *Window) MaxLag(now time.Time) time.Duration {
	w.expire(now)
	if len(w.lags) == 0 {
		return 0
	}
	return w.lags[0].lag
}

// Reset empties the window.
func (w *Window) Reset() {
	w.buckets, w.bad, w.total, w.lags = nil, 0, 0, nil
}
