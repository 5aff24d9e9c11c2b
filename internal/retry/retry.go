package retry

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Jitter is the share by which each wait is randomized either way: a
// wait of 1 s is between 0.75 s and 1.25 s (never above the ceiling).
const Jitter = 0.25

// Backoff is one retry schedule. Not safe for concurrent use: each loop
// holds its own.
type Backoff struct {
	exp     backoff.ExponentialBackOff
	ceiling time.Duration
}

// New is a schedule whose first wait is about first, each next one
// about twice the last, none above ceiling.
func New(first, ceiling time.Duration) *Backoff {
	return &Backoff{
		exp:     backoff.ExponentialBackOff{InitialInterval: first, RandomizationFactor: Jitter, Multiplier: 2, MaxInterval: ceiling},
		ceiling: ceiling,
	}
}

// Next is the wait before the next try.
func (b *Backoff) Next() time.Duration { return min(b.exp.NextBackOff(), b.ceiling) }

// Reset starts the schedule again, after a try that worked.
func (b *Backoff) Reset() { b.exp.Reset() }

// Ceiling is the longest wait of the schedule.
func (b *Backoff) Ceiling() time.Duration { return b.ceiling }

// TickEvery is how often Wait calls its tick: well inside any stall
// limit, so a loop that waits on purpose never reads as stalled.
const TickEvery = 250 * time.Millisecond

// Wait waits d, calling tick (when not nil) at once and every TickEvery
// meanwhile (a waiting process is alive on purpose: its health check
// must say so); false when ctx ended first.
func Wait(ctx context.Context, d time.Duration, tick func()) bool {
	if tick == nil {
		tick = func() {}
	}
	t := time.NewTicker(TickEvery)
	defer t.Stop()
	end := time.NewTimer(d)
	defer end.Stop()
	for {
		tick()
		select {
		case <-ctx.Done():
			return false
		case <-end.C:
			return true
		case <-t.C:
		}
	}
}
