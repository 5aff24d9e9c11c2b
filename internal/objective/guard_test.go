package objective

import (
	"strings"
	"testing"
	"time"
)

func TestGuardTripsAndResumes(t *testing.T) {
	specs := []Spec{
		{Route: DirtyRoute, Kind: DirtyShare, Max: 0.1, Records: 100, MinRecords: 50, Pause: true},
		{Route: "counts", Kind: LateShare, Max: 0.5, Span: time.Minute, MinRecords: 1},
	}
	g := NewGuard(specs)
	now := time.Unix(1_700_000_000, 0)
	feed := func(dirty, in int64) []Status {
		return g.Observe(now, func(s Spec) Sample {
			if s.Kind == DirtyShare {
				return Sample{Bad: dirty, Total: in}
			}
			return Sample{}
		})
	}
	// 20 of 40 dirty: over the max, under min_records: no breach.
	if st := feed(20, 40); st[0].Breached || g.Paused(now) != nil {
		t.Fatalf("breached under min_records: %+v", st[0])
	}
	st := feed(20, 40) // 40/80
	if !st[0].Breached || st[0].Value != 0.5 {
		t.Fatalf("status %+v, want breached at 0.5", st[0])
	}
	trip := g.Paused(now)
	if trip == nil || trip.Route != DirtyRoute || trip.Kind != DirtyShare || trip.Value != 0.5 {
		t.Fatalf("trip %+v", trip)
	}
	if r := trip.Reason(); !strings.Contains(r, "route dirty objective dirty_share is 0.5000") {
		t.Fatalf("reason %q", r)
	}
	if g.Resume() == nil || g.Paused(now) != nil {
		t.Fatal("resume did not end the pause")
	}
	if st := g.Statuses(now); st[0].Total != 0 || st[0].Breached {
		t.Fatalf("window not emptied by the resume: %+v", st[0])
	}
	if g.Resume() != nil {
		t.Fatal("a second resume ended a pause")
	}
}

func TestGuardResumesByItself(t *testing.T) {
	g := NewGuard([]Spec{{Route: DirtyRoute, Kind: DirtyShare, Max: 0, Records: 1, MinRecords: 1, Pause: true, ResumeAfter: time.Minute}})
	now := time.Unix(1_700_000_000, 0)
	g.Observe(now, func(Spec) Sample { return Sample{Bad: 1, Total: 1} })
	if g.Paused(now.Add(59*time.Second)) == nil {
		t.Fatal("resumed before resume_after")
	}
	if g.Paused(now.Add(time.Minute)) != nil {
		t.Fatal("still paused at resume_after")
	}
}

// An objective without pause never trips the guard.
func TestGuardAlertOnly(t *testing.T) {
	g := NewGuard([]Spec{{Route: "r", Kind: LateShare, Max: 0, Records: 1, MinRecords: 1}})
	st := g.Observe(time.Unix(0, 0), func(Spec) Sample { return Sample{Bad: 1, Total: 1} })
	if !st[0].Breached || g.Paused(time.Unix(0, 0)) != nil {
		t.Fatalf("status %+v, paused %v", st[0], g.Paused(time.Unix(0, 0)))
	}
}

// An event-time lag objective is breached by old records once the window
// holds min_records, trips the guard with the lag in its reason, and
// after a resume fresh records judge it afresh; a record ahead of the
// clock has no lag.
func TestGuardEventTimeLag(t *testing.T) {
	g := NewGuard([]Spec{{Route: "orders", Kind: EventTimeLag, Max: 60, Records: 100, MinRecords: 10, Pause: true}})
	now := time.Unix(1_700_000_000, 0)
	feed := func(n int64, age time.Duration) Status {
		return g.Observe(now, func(Spec) Sample { return Sample{Total: n, Newest: now.Add(-age)} })[0]
	}
	if st := feed(5, time.Hour); st.Breached || st.Value != 3600 {
		t.Fatalf("status %+v, want 3600 s under min_records", st)
	}
	if st := feed(5, time.Second); !st.Breached || st.Value != 3600 {
		t.Fatalf("status %+v, want breached at the window's largest lag, 3600 s", st)
	}
	trip := g.Paused(now)
	if trip == nil || trip.Kind != EventTimeLag || !strings.Contains(trip.Reason(), "objective event_time_lag is 1h0m0s, over its max 1m0s") {
		t.Fatalf("trip %+v", trip)
	}
	g.Resume()
	if st := feed(20, -time.Minute); st.Breached || st.Value != 0 {
		t.Fatalf("after the resume, records ahead of the clock: %+v, want 0", st)
	}
	if st := feed(100, 2*time.Second); st.Breached || st.Value != 2 {
		t.Fatalf("fresh records: %+v, want 2 s", st)
	}
}
