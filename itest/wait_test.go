package itest

import (
	"testing"
	"time"
)

// pollEvery is how often waitFor looks again.
const pollEvery = 100 * time.Millisecond

// waitFor is every wait of these tests: it calls cond until it reports
// done, or fails the test once limit has passed, saying what it waited
// for and what cond saw last. cond may fail the test itself (a router that
// exited while awaited). A slow wait logs what it sees every 15 s, so a
// run on a loaded machine shows where its time went. Limits are ceilings,
// not pacing: size them for a machine twice as slow as a quiet one, and
// under load.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() (done bool, seen string)) {
	t.Helper()
	waitEvery(t, pollEvery, limit, what, cond)
}

// waitEvery is waitFor with its own poll interval, for a wait that must
// act soon after the condition holds.
func waitEvery(t testing.TB, every, limit time.Duration, what string, cond func() (done bool, seen string)) {
	t.Helper()
	start := time.Now()
	lastLog := start
	for {
		done, seen := cond()
		if done {
			return
		}
		if time.Since(start) > limit {
			t.Fatalf("%s: not after %s; last seen: %s", what, limit, seen)
		}
		if time.Since(lastLog) > 15*time.Second {
			t.Logf("still waiting for %s (%s): %s", what, time.Since(start).Round(time.Second), seen)
			lastLog = time.Now()
		}
		time.Sleep(every)
	}
}
