package retry

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestBackoffBounds: each wait lies within Jitter of the doubling
// schedule and never above the ceiling; Reset starts it again; the waits
// are not all alike (there is jitter).
func TestBackoffBounds(t *testing.T) {
	const first, ceiling = 100 * time.Millisecond, 1500 * time.Millisecond
	seen := map[time.Duration]bool{}
	for range 200 {
		b := New(first, ceiling)
		want := first
		for i := range 8 {
			got := b.Next()
			lo := time.Duration(float64(want) * (1 - Jitter))
			hi := min(time.Duration(float64(want)*(1+Jitter))+1, ceiling)
			if got < lo || got > hi {
				t.Fatalf("wait %d = %s, want within [%s, %s]", i, got, lo, hi)
			}
			seen[got] = true
			want = min(want*2, ceiling)
		}
		b.Reset()
		if got := b.Next(); got > time.Duration(float64(first)*(1+Jitter))+1 {
			t.Fatalf("after Reset the wait is %s, want about %s", got, first)
		}
	}
	if len(seen) < 100 {
		t.Fatalf("%d distinct waits over 1600: want jitter", len(seen))
	}
	if got := New(first, ceiling).Ceiling(); got != ceiling {
		t.Fatalf("Ceiling() = %s", got)
	}
}

// TestWait: a wait ends when its time is up (true) or when ctx ends
// (false, at once), ticking at once and every TickEvery meanwhile.
func TestWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ticks := 0
		start := time.Now()
		if !Wait(context.Background(), 3600*time.Millisecond, func() { ticks++ }) {
			t.Fatal("Wait without cancel returned false")
		}
		if took := time.Since(start); took != 3600*time.Millisecond {
			t.Fatalf("waited %s, want 3.6s", took)
		}
		if want := 1 + int(3600*time.Millisecond/TickEvery); ticks != want { // at once, then each TickEvery
			t.Fatalf("ticked %d times, want %d", ticks, want)
		}

		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(1500*time.Millisecond, cancel)
		start = time.Now()
		if Wait(ctx, time.Hour, nil) {
			t.Fatal("Wait returned true although ctx ended")
		}
		if took := time.Since(start); took != 1500*time.Millisecond {
			t.Fatalf("a cancelled wait took %s, want 1.5s", took)
		}
	})
}
