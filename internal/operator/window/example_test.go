package window_test

import (
	"fmt"
	"time"

	"github.com/sidestream/sidestream/internal/changelog"
	"github.com/sidestream/sidestream/internal/operator/window"
)

// Tumbling one-minute windows, 10 s of out-of-orderness and 30 s of
// grace: a first result when the watermark passes the window's end, an
// update for a late record inside grace, a final marker at purge, and
// the late route after that.
func Example() {
	op, err := window.New(window.Spec{
		Kind:              window.Tumbling,
		Size:              time.Minute,
		MaxOutOfOrderness: 10 * time.Second,
		Grace:             30 * time.Second,
		Emit:              window.EmitUpdate,
		Aggregations:      []window.Aggregation{{Name: "clicks", Kind: window.Count}, {Name: "last_page", Kind: window.Last}},
	}, changelog.NewMemory())
	if err != nil {
		panic(err)
	}
	show := func(out window.Output, err error) {
		if err != nil {
			fmt.Println("dirty:", err)
		}
		for _, r := range out.Results {
			fmt.Printf("%s %s\n", r.Key, r.Value)
		}
		if l := out.Late; l != nil {
			fmt.Printf("late: watermark %d, missed %v, by %d ms\n", l.Watermark, l.Windows, l.LateBy)
		}
	}
	show(op.Process("alice", 5_000, []any{1, "/home"}))
	show(op.Process("alice", 65_000, []any{1, "/cart"}))   // watermark 55 s
	show(op.Process("alice", 75_000, []any{1, "/pay"}))    // watermark 65 s: [0, 60 s) fires
	show(op.Process("alice", 59_000, []any{1, "/search"})) // inside grace: an update
	show(op.Process("alice", 110_000, []any{1, "/done"}))  // watermark 100 s: purge, final
	show(op.Process("alice", 30_000, []any{1, "/old"}))    // past grace: late
	show(op.Process("alice", 111_000, []any{1, 3.5}))
	show(op.Process("alice", 112_000, []any{1, []string{"x"}}))
	// Output:
	// alice@0 {"key":"alice","window_start":0,"window_end":60000,"aggregates":{"clicks":1,"last_page":"/home"},"revision":1,"final":false}
	// alice@0 {"key":"alice","window_start":0,"window_end":60000,"aggregates":{"clicks":2,"last_page":"/search"},"revision":2,"final":false}
	// alice@0 {"key":"alice","window_start":0,"window_end":60000,"aggregates":{"clicks":2,"last_page":"/search"},"revision":3,"final":true}
	// late: watermark 100000, missed [[0,60000)], by 10000 ms
	// dirty: window: value_type: aggregation "last_page": last cannot aggregate a []string
}
