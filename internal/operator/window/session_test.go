package window

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

func brief(out Output) []string {
	var s []string
	for _, r := range out.Results {
		switch {
		case r.Retract:
			s = append(s, fmt.Sprintf("retract %s [%d,%d) r%d", r.Key, r.Start, r.End, r.Revision))
		default:
			var v struct{ Aggregates map[string]any }
			_ = json.Unmarshal(r.Value, &v)
			f := ""
			if r.Final {
				f = " final"
			}
			s = append(s, fmt.Sprintf("%s [%d,%d) r%d%s n=%v", r.Key, r.Start, r.End, r.Revision, f, v.Aggregates["n"]))
		}
	}
	if l := out.Late; l != nil {
		s = append(s, fmt.Sprintf("late wm=%d missed=%v by=%d", l.Watermark, l.Windows, l.LateBy))
	}
	return s
}

// TestSessionMerges walks through session merging: adjacency merges,
// a merge that spans two sessions, revisions continuing after a merge,
// a merged session that must fire again, a retraction when the merged
// session starts earlier, and a record that touches only purged sessions.
func TestSessionMerges(t *testing.T) {
	s := Spec{Kind: Session, Gap: msd(10), Grace: msd(20), Aggregations: []Aggregation{{"n", Count}}}
	o, st := newOp(t, s)
	steps := []struct {
		what string
		t    int64 // record time; -1 = advance to 200
		want []string
	}{
		{"session [0,10)", 0, nil},
		{"watermark 25 fires [0,10); new session [25,35)", 25, []string{"k@0 [0,10) r1 n=1"}},
		{"t=10 touches [0,10): merged [0,20) is past the watermark, emits at once, revision continues", 10, []string{"k@0 [0,20) r2 n=2"}},
		{"t=16 bridges [0,20) and [25,35): [0,35) ends after the watermark, waits to fire", 16, nil},
		{"watermark 40 fires [0,35) with the next revision; new [40,50)", 40, []string{"k@0 [0,35) r3 n=4"}},
		{"watermark 60 purges [0,35) and fires [40,50)", 60, []string{"k@0 [0,35) r4 final n=4", "k@40 [40,50) r1 n=1"}},
		{"t=36 extends [40,50) to start earlier: emit k@36, retract k@40", 36, []string{"k@36 [36,50) r2 n=2", "retract k@40 [40,50) r2"}},
		{"t=5 touches only the purged [0,35): late", 5, []string{"late wm=60 missed=[[5,15)] by=25"}},
		{"drain", -1, []string{"k@36 [36,50) r3 final n=2", "k@60 [60,70) r1 final n=1"}},
	}
	for _, step := range steps {
		var out Output
		var err error
		if step.t >= 0 {
			out, err = o.Process("k", step.t, []any{1})
		} else {
			out, err = o.AdvanceWatermark(200)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := brief(out); !slices.Equal(got, step.want) {
			t.Errorf("%s:\n got  %q\n want %q", step.what, got, step.want)
		}
		checkStore(t, o, st)
	}
}

// A hopping record that missed some of its windows but not all is applied
// to the open ones and is not late.
func TestHoppingPartlyPurgedIsNotLate(t *testing.T) {
	s := Spec{Kind: Hopping, Size: msd(10), Advance: msd(5), Aggregations: []Aggregation{{"n", Count}}}
	o, st := newOp(t, s)
	steps := []struct {
		t    int64 // record time; < 0: advance to -t
		want []string
	}{
		{7, nil},
		{12, []string{"k@0 [0,10) r1 final n=1"}}, // grace 0: fires and purges at once
		{9, nil}, // missed [0,10), joins [5,15): not late
		{-20, []string{"k@5 [5,15) r1 final n=3", "k@10 [10,20) r1 final n=1"}},
		{14, []string{"late wm=20 missed=[[5,15) [10,20)] by=0"}},
	}
	for _, step := range steps {
		var out Output
		var err error
		if step.t >= 0 {
			out, err = o.Process("k", step.t, []any{1})
		} else {
			out, err = o.AdvanceWatermark(-step.t)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := brief(out); !slices.Equal(got, step.want) {
			t.Errorf("t=%d: got %q, want %q", step.t, got, step.want)
		}
		checkStore(t, o, st)
	}
}
