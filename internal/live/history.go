package live

import (
	"context"
	"sync"
	"time"
)

// The history the web view draws its charts from: the counters sampled
// every HistoryInterval, HistorySpan of them kept in the process (nothing
// is stored; a restart starts an empty history).
const (
	HistoryInterval = 5 * time.Second
	HistorySpan     = 15 * time.Minute
)

// History is a ring of counter samples. Safe for concurrent use.
type History struct {
	mu   sync.Mutex
	at   []time.Time
	vals []map[string]float64
	next int // where the next sample goes
	n    int // samples held, at most len(at)
}

// NewHistory keeps the last size samples (at least 2: a rate needs two).
func NewHistory(size int) *History {
	size = max(size, 2)
	return &History{at: make([]time.Time, size), vals: make([]map[string]float64, size)}
}

// Add records the counters as they are at t. The map is kept: the caller
// must not change it afterwards.
func (h *History) Add(t time.Time, counters map[string]float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.at[h.next], h.vals[h.next] = t, counters
	h.next = (h.next + 1) % len(h.at)
	h.n = min(h.n+1, len(h.at))
}

// HistoryView is the history as /ui/history serves it: for each interval
// between two samples, its end and each counter's rate per second over it.
type HistoryView struct {
	IntervalMs int64 `json:"interval_ms"`
	SpanMs     int64 `json:"span_ms"`
	// Times are the ends of the intervals, epoch ms, oldest first.
	Times []int64 `json:"times"`
	// Rates has one series per counter key of View's Counters, aligned
	// with Times. A counter that went down (a restart of its series)
	// counts as 0 over that interval.
	Rates map[string][]float64 `json:"rates"`
}

// View returns the rates between consecutive samples, oldest first.
func (h *History) View() HistoryView {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := HistoryView{IntervalMs: HistoryInterval.Milliseconds(), SpanMs: HistorySpan.Milliseconds(),
		Times: []int64{}, Rates: map[string][]float64{}}
	if h.n < 2 {
		return v
	}
	first := (h.next - h.n + len(h.at)) % len(h.at)
	keys := map[string]bool{}
	for i := range h.n {
		for k := range h.vals[(first+i)%len(h.at)] {
			keys[k] = true
		}
	}
	for k := range keys {
		v.Rates[k] = make([]float64, 0, h.n-1)
	}
	for i := 1; i < h.n; i++ {
		prev, cur := (first+i-1)%len(h.at), (first+i)%len(h.at)
		secs := h.at[cur].Sub(h.at[prev]).Seconds()
		v.Times = append(v.Times, h.at[cur].UnixMilli())
		for k := range keys {
			r := 0.0
			if d := h.vals[cur][k] - h.vals[prev][k]; d > 0 && secs > 0 {
				r = d / secs
			}
			v.Rates[k] = append(v.Rates[k], r)
		}
	}
	return v
}

// RunHistory samples s's counters into its history every interval until
// ctx ends, the first at once.
func (s *State) RunHistory(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.history.Add(time.Now(), s.gather())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// History returns the rates of the last HistorySpan.
func (s *State) History() HistoryView { return s.history.View() }
