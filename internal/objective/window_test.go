package objective

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

type commit struct {
	at         time.Time
	bad, total int64
}

// oracle is the window's definition, counted by brute force over every
// commit so far: a records window is the shortest run of newest commits
// (with records) holding at least n records, or all of them; a span
// window the commits in (now-span, now].
func oracle(commits []commit, n int, span time.Duration, now time.Time) (bad, total int64) {
	if n > 0 {
		for i := len(commits) - 1; i >= 0; i-- {
			if commits[i].total == 0 {
				continue
			}
			bad += commits[i].bad
			total += commits[i].total
			if total >= int64(n) {
				break
			}
		}
		return bad, total
	}
	for _, c := range commits {
		if c.at.After(now.Add(-span)) {
			bad += c.bad
			total += c.total
		}
	}
	return bad, total
}

// The share a window reports equals the brute-force count over its
// definition after every commit and at any later time.
func TestWindowMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		byRecords := rapid.Bool().Draw(t, "byRecords")
		n, span := 0, time.Duration(0)
		if byRecords {
			n = rapid.IntRange(1, 500).Draw(t, "records")
		} else {
			span = time.Duration(rapid.IntRange(1, 5000).Draw(t, "spanMs")) * time.Millisecond
		}
		w := NewWindow(n, span)
		now := time.Unix(1_700_000_000, 0)
		var commits []commit
		steps := rapid.IntRange(1, 80).Draw(t, "commits")
		for i := 0; i < steps; i++ {
			now = now.Add(time.Duration(rapid.IntRange(0, 2000).Draw(t, "gapMs")) * time.Millisecond)
			total := int64(rapid.IntRange(0, 200).Draw(t, "total"))
			bad := int64(rapid.IntRange(0, int(total)).Draw(t, "bad"))
			commits = append(commits, commit{now, bad, total})
			w.Add(now, bad, total)
			look := now.Add(time.Duration(rapid.IntRange(0, 3000).Draw(t, "lookMs")) * time.Millisecond)
			if !byRecords && rapid.Bool().Draw(t, "lookLater") {
				now = look // a later reading expires commits; later adds come after it
			}
			gb, gt := w.Counts(now)
			wb, wt := oracle(commits, n, span, now)
			if gb != wb || gt != wt {
				t.Fatalf("after %d commits at %v: window holds %d/%d, brute force %d/%d", i+1, now, gb, gt, wb, wt)
			}
			var want float64
			if wt > 0 {
				want = float64(wb) / float64(wt)
			}
			if got := w.Share(now); got != want {
				t.Fatalf("share %v, brute force %v", got, want)
			}
		}
	})
}

func TestWindowRecordsBounds(t *testing.T) {
	w := NewWindow(100, 0)
	now := time.Unix(0, 0)
	for i := 0; i < 10; i++ {
		w.Add(now, 1, 30)
	}
	// 30+30+30+30 = 120 >= 100, and dropping one more leaves 90 < 100.
	if bad, total := w.Counts(now); bad != 4 || total != 120 {
		t.Fatalf("window holds %d/%d, want 4/120", bad, total)
	}
}

type lagCommit struct {
	at    time.Time
	total int64
	lag   time.Duration
}

// lagOracle is the largest lag of the commits a window holds, by brute
// force over the window's definition (as oracle): 0 when it holds none.
func lagOracle(commits []lagCommit, n int, span time.Duration, now time.Time) (lag time.Duration, total int64) {
	for i := len(commits) - 1; i >= 0; i-- {
		c := commits[i]
		if c.total == 0 {
			continue
		}
		if n == 0 && !c.at.After(now.Add(-span)) {
			break // older commits are older still
		}
		lag, total = max(lag, c.lag), total+c.total
		if n > 0 && total >= int64(n) {
			break
		}
	}
	return lag, total
}

// The largest lag a window reports equals the brute-force largest lag
// over its definition after every commit and at any later time, and a
// reset empties it.
func TestWindowMaxLagMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		byRecords := rapid.Bool().Draw(t, "byRecords")
		n, span := 0, time.Duration(0)
		if byRecords {
			n = rapid.IntRange(1, 500).Draw(t, "records")
		} else {
			span = time.Duration(rapid.IntRange(1, 5000).Draw(t, "spanMs")) * time.Millisecond
		}
		w := NewWindow(n, span)
		now := time.Unix(1_700_000_000, 0)
		var commits []lagCommit
		steps := rapid.IntRange(1, 80).Draw(t, "commits")
		for i := 0; i < steps; i++ {
			now = now.Add(time.Duration(rapid.IntRange(0, 2000).Draw(t, "gapMs")) * time.Millisecond)
			total := int64(rapid.IntRange(0, 200).Draw(t, "total"))
			lag := time.Duration(rapid.IntRange(0, 100_000).Draw(t, "lagMs")) * time.Millisecond
			if rapid.IntRange(0, 9).Draw(t, "reset") == 0 {
				w.Reset()
				commits = nil
			}
			commits = append(commits, lagCommit{now, total, lag})
			w.AddLag(now, total, lag)
			if !byRecords && rapid.Bool().Draw(t, "lookLater") {
				now = now.Add(time.Duration(rapid.IntRange(0, 3000).Draw(t, "lookMs")) * time.Millisecond)
			}
			wantLag, wantTotal := lagOracle(commits, n, span, now)
			if got := w.MaxLag(now); got != wantLag {
				t.Fatalf("after %d commits at %v: largest lag %v, brute force %v", i+1, now, got, wantLag)
			}
			if _, got := w.Counts(now); got != wantTotal {
				t.Fatalf("after %d commits: %d records, brute force %d", i+1, got, wantTotal)
			}
		}
	})
}
