package window

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSeed001LateOrders is the scenario of seed 001: a small
// out-of-orderness keeps results fast, a large grace (allowed lateness)
// lets late orders correct them for hours, and the late route is the last
// line of defence for what arrives after that. Orders are counted and
// summed per shop in 5-minute tumbling windows.
func TestSeed001LateOrders(t *testing.T) {
	day := time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)
	at := func(hhmm string) int64 {
		var h, m int
		fmt.Sscanf(hhmm, "%d:%d", &h, &m)
		return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute).UnixMilli()
	}
	hm := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04") }
	show := func(out Output) []string {
		var s []string
		for _, r := range out.Results {
			var v struct{ Aggregates map[string]any }
			_ = json.Unmarshal(r.Value, &v)
			f := ""
			if r.Final {
				f = " final"
			}
			s = append(s, fmt.Sprintf("%s@%s r%d%s n=%v amount=%v", r.GroupKey, hm(r.Start), r.Revision, f, v.Aggregates["orders"], v.Aggregates["amount"]))
		}
		if l := out.Late; l != nil {
			var w []string
			for _, sp := range l.Windows {
				w = append(w, hm(sp.Start)+"-"+hm(sp.End))
			}
			s = append(s, fmt.Sprintf("LATE watermark=%s missed=%s by=%v", hm(l.Watermark), strings.Join(w, ","), time.Duration(l.LateBy)*time.Millisecond))
		}
		return s
	}
	steps := []struct {
		what   string
		event  string // event time of an order of shop-1; "" for an idle advance
		amount int
		idleTo string
		update []string // outputs in EmitUpdate mode
		final  []string // outputs in EmitFinal mode
	}{
		{what: "first order", event: "10:01", amount: 10},
		{what: "second order", event: "10:03", amount: 20},
		{what: "watermark 10:06 passes 10:05: first result", event: "10:07", amount: 5,
			update: []string{"shop-1@10:00 r1 n=2 amount=30"}},
		{what: "late order inside grace updates the result", event: "10:02", amount: 7,
			update: []string{"shop-1@10:00 r2 n=3 amount=37"}},
		{what: "time moves on to 11:30", event: "11:30", amount: 1,
			update: []string{"shop-1@10:05 r1 n=1 amount=5"}},
		{what: "the 10:04 order reported at 11:30 still counts", event: "10:04", amount: 100,
			update: []string{"shop-1@10:00 r3 n=4 amount=137"}},
		{what: "watermark 14:09 passes 10:05+4h: purge with the final result", event: "14:10", amount: 1,
			update: []string{"shop-1@10:00 r4 final n=4 amount=137", "shop-1@11:30 r1 n=1 amount=1"},
			final:  []string{"shop-1@10:00 r1 final n=4 amount=137"}},
		{what: "after grace: the late route, state untouched", event: "10:01", amount: 9,
			update: []string{"LATE watermark=14:09 missed=10:00-10:05 by=4m0s"},
			final:  []string{"LATE watermark=14:09 missed=10:00-10:05 by=4m0s"}},
		{what: "idle advance to 18:15 closes the rest (14:10 fires and purges at once: one final)", idleTo: "18:15",
			update: []string{"shop-1@10:05 r2 final n=1 amount=5", "shop-1@11:30 r2 final n=1 amount=1", "shop-1@14:10 r1 final n=1 amount=1"},
			final:  []string{"shop-1@10:05 r1 final n=1 amount=5", "shop-1@11:30 r1 final n=1 amount=1", "shop-1@14:10 r1 final n=1 amount=1"}},
	}
	for _, mode := range []EmitMode{EmitUpdate, EmitFinal} {
		t.Run(mode.String(), func(t *testing.T) {
			s := Spec{
				Kind: Tumbling, Size: 5 * time.Minute,
				MaxOutOfOrderness: time.Minute, Grace: 4 * time.Hour, Emit: mode,
				Aggregations: []Aggregation{{"orders", Count}, {"amount", Sum}},
			}
			o, st := newOp(t, s)
			for _, step := range steps {
				var out Output
				var err error
				if step.event != "" {
					out, err = o.Process("shop-1", at(step.event), []any{1, step.amount})
				} else {
					out, err = o.AdvanceWatermark(at(step.idleTo))
				}
				if err != nil {
					t.Fatal(err)
				}
				want := step.update
				if mode == EmitFinal {
					want = step.final
				}
				if got := show(out); !slices.Equal(got, want) {
					t.Errorf("%s:\n got  %q\n want %q", step.what, got, want)
				}
			}
			if o.OpenWindows() != 0 || st.Len() != 1 {
				t.Errorf("state left: %d windows, %d keys", o.OpenWindows(), st.Len())
			}
		})
	}
}
