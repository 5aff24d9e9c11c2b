package itest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestInputGap: the head of an input partition is deleted (DeleteRecords)
// while the router is stopped. Under on_gap: skip the restarted router
// counts exactly the deleted offsets it never read, names the partition
// and the range in /tasks, /metrics and one ERROR log line, and goes on;
// under on_gap: fail it is not ready, /readyz names the range, and the
// group's offset stays before the gap.
func TestInputGap(t *testing.T) {
	for _, policy := range []string{"skip", "fail"} {
		t.Run(policy, func(t *testing.T) {
			s := newScenario(t, "input_gap_"+policy, 3000)
			b, err := os.ReadFile(s.config)
			if err != nil {
				t.Fatal(err)
			}
			in := "  - topic: " + s.input + "\n"
			if !strings.Contains(string(b), in) {
				t.Fatalf("topology has no %q", in)
			}
			y := strings.Replace(string(b), in, in+"    on_gap: "+policy+"\n", 1)
			if err := os.WriteFile(s.config, []byte(y), 0o644); err != nil {
				t.Fatal(err)
			}
			half := len(s.events) / 2
			p := s.startProducerRange(0, half, 0)
			r := s.startRouter("a", fastGroup...)
			p.wait(t, time.Minute)
			s.waitCommittedSum(int64(half), time.Minute, r)
			r.stop(40 * time.Second)

			// While stopped: the second half is written, and partition 2
			// loses 40 of the records the router has not read.
			p = s.startProducerRange(half, len(s.events), 0)
			p.wait(t, time.Minute)
			before, _ := s.committed()
			from := before[2]
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ends, err := s.adm.ListEndOffsets(ctx, s.input)
			if err != nil {
				t.Fatal(err)
			}
			if end, _ := ends.Lookup(s.input, 2); end.Offset < from+40 {
				t.Fatalf("partition 2 holds %d unread records, the test needs 40", end.Offset-from)
			}
			del := kadm.Offsets{}
			del.Add(kadm.Offset{Topic: s.input, Partition: 2, At: from + 40, LeaderEpoch: -1})
			if dr, err := s.adm.DeleteRecords(ctx, del); err != nil || dr.Error() != nil {
				t.Fatalf("delete records: %v %v", err, dr.Error())
			}

			r = r.restart()
			rangeText := fmt.Sprintf("topic %s partition 2: offsets %d to %d (40 offsets)", s.input, from, from+39)
			if policy == "fail" {
				deadline := time.Now().Add(time.Minute)
				for {
					code, body := r.readyz()
					if code == 503 && strings.Contains(body, rangeText) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("not stopped on the gap within 1m: %d %s", code, body)
					}
					time.Sleep(100 * time.Millisecond)
				}
				if c, _ := s.committed(); c[2] != from {
					t.Fatalf("committed offset of partition 2 moved to %d under on_gap: fail, want %d", c[2], from)
				}
				if v := metricValue(t, r, fmt.Sprintf(`sidestream_input_gap_stopped{partition="2",topic=%q}`, s.input)); v != 1 {
					t.Fatalf("sidestream_input_gap_stopped of partition 2 = %v, want 1", v)
				}
				return
			}
			s.waitCommittedSum(int64(len(s.events)), time.Minute, r)
			deadline := time.Now().Add(30 * time.Second)
			for metricValue(t, r, fmt.Sprintf(`sidestream_input_records_lost_total{partition="2",topic=%q}`, s.input)) != 40 {
				if time.Now().After(deadline) {
					t.Fatalf("sidestream_input_records_lost_total of partition 2 never 40")
				}
				time.Sleep(100 * time.Millisecond)
			}
			consumed := metricValue(t, r, fmt.Sprintf(`sidestream_records_consumed_total{topic=%q}`, s.input))
			if want := float64(len(s.events) - half - 40); consumed != want {
				t.Fatalf("consumed %v after the restart, want %v (the second half but the 40 deleted)", consumed, want)
			}
			_, body, err := r.get("/tasks")
			if err != nil {
				t.Fatal(err)
			}
			var ts []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Lost      int64  `json:"lost"`
				Gaps      []struct {
					From, To, Offsets int64
					Skipped           bool
				} `json:"gaps"`
			}
			if err := json.Unmarshal(body, &ts); err != nil {
				t.Fatal(err)
			}
			for _, tk := range ts {
				switch {
				case tk.Topic == s.input && tk.Partition == 2:
					if tk.Lost != 40 || len(tk.Gaps) != 1 || tk.Gaps[0].From != from || tk.Gaps[0].To != from+40 || !tk.Gaps[0].Skipped {
						t.Fatalf("/tasks partition 2: %s", body)
					}
				case tk.Lost != 0:
					t.Fatalf("/tasks: %s/%d lost %d, only partition 2 lost records", tk.Topic, tk.Partition, tk.Lost)
				}
			}
			if l := r.logLines(0, "were skipped (on_gap: skip)", fmt.Sprintf("from=%d", from)); len(l) != 1 {
				t.Fatalf("%d ERROR lines for the gap, want 1: %v", len(l), l)
			}
			r.stop(40 * time.Second)
		})
	}
}

// waitCommittedSum waits until the group's committed input offsets add
// up to n.
func (s *scenario) waitCommittedSum(n int64, limit time.Duration, live ...*router) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if _, sum := s.committed(); sum == n {
			return
		}
		for _, r := range live {
			if r.exited() {
				s.t.Fatalf("router %s exited by itself: %s", r.id, r.cmd.ProcessState)
			}
		}
		if time.Now().After(deadline) {
			_, sum := s.committed()
			s.t.Fatalf("committed offsets add up to %d after %s, want %d", sum, limit, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricValue is the value of one series on the router's /metrics (0
// when absent).
func metricValue(t *testing.T, r *router, series string) float64 {
	t.Helper()
	_, b, err := r.get("/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}
