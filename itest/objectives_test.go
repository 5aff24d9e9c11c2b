package itest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sidestream/sidestream/internal/gen"
)

// sloToken is the bearer token of the objective test's API.
const sloToken = "slo-itest-token-0123456789"

// TestObjectivePauseExactlyOnce: under exactly-once, a burst of bad
// records trips the dirty route's objective (on_breach: pause); the
// router stops consuming (the group's committed offsets hold while
// records keep arriving) and /readyz says which route and objective and
// the value; POST /resume, behind the API's bearer auth, resumes it, and
// read back read_committed every input record is on its route (main,
// warn, error or dirty) exactly once.
func TestObjectivePauseExactlyOnce(t *testing.T) {
	const before, burst, after = 3000, 2000, 6000
	s := newScenario(t, "objective_pause", before+burst+after)
	// The burst: records whose JSON is cut short, dirty (invalid_json),
	// their id still in the value.
	for i := before; i < before+burst; i++ {
		ev := &s.events[i]
		ev.Kind, ev.Value = gen.KindTruncated, ev.Value[:len(ev.Value)/2]
	}
	s.want = map[string]int{}
	for _, ev := range s.events {
		s.want[s.topicOf[gen.RouteOf[ev.Kind]]]++
	}
	// Over half dirty among the newest 500+ records pauses the inputs:
	// any window within the burst is. A resume empties the window, so
	// the rest of the burst may trip the guard again: each trip is
	// resumed, as an operator would, and counted.
	writeSLO(t, s, "  slo: {max_dirty_share: 0.5, records: 500, min_records: 500, on_breach: pause}\n")
	r := s.startRouterEnv("a", s.brokers, []string{"SIDESTREAM_API_AUTH=bearer", "SIDESTREAM_API_TOKENS=" + sloToken})
	r.waitReady(2 * time.Minute)
	s.startProducerRange(0, before, 0).wait(t, 2*time.Minute)
	waitFor(t, 2*time.Minute, "the records before the burst committed", func() (bool, string) {
		requireRunning(t, r)
		_, sum := s.committed()
		return sum == before, fmt.Sprintf("committed %d of %d", sum, before)
	})
	if code, body := r.readyz(); code != http.StatusOK {
		t.Fatalf("not ready before the burst: %d %s", code, body)
	}

	// A steady rate keeps polls and commits small, so the guard trips
	// within the burst and the rest still waits in Kafka.
	p := s.startProducerRange(before, len(s.events), 2000)
	var why string
	waitFor(t, 2*time.Minute, "/readyz names the breached objective", func() (bool, string) {
		requireRunning(t, r)
		code, body := r.readyz()
		why = body
		return code == http.StatusServiceUnavailable && strings.Contains(body, "route dirty objective dirty_share"), fmt.Sprintf("%d %s; %s", code, body, objectiveLines(r))
	})
	t.Logf("tripped: %s", why)
	p.wait(t, 2*time.Minute)
	_, held := s.committed()
	if held >= int64(len(s.events)) {
		t.Fatalf("committed all %d records although the guard tripped", held)
	}
	// Paused: the committed offsets hold while every record waits in Kafka.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if _, now := s.committed(); now != held && now >= 0 {
			t.Fatalf("committed %d -> %d records while paused", held, now)
		}
	}
	if code, body, _ := r.get("/metrics"); code != 200 || !strings.Contains(string(body), `sidestream_objective_paused{objective="dirty_share",route="dirty"} 1`) {
		t.Fatalf("/metrics %d lacks the paused objective", code)
	}
	if code, _ := resume(t, r, ""); code != http.StatusUnauthorized {
		t.Fatalf("POST /resume without the token: %d, want 401", code)
	}
	code, res := resume(t, r, sloToken)
	if code != 200 || res["resumed"] != true {
		t.Fatalf("POST /resume: %d %v", code, res)
	}
	resumes := 1
	waitFor(t, 3*time.Minute, "every record committed after the resume", func() (bool, string) {
		requireRunning(t, r)
		if code, body := r.readyz(); code == http.StatusServiceUnavailable && strings.Contains(body, "inputs paused") {
			resume(t, r, sloToken) // a later window tripped again: counted below
			resumes++
		}
		_, sum := s.committed()
		return sum == int64(len(s.events)), fmt.Sprintf("committed %d of %d", sum, len(s.events))
	})
	r.waitReady(time.Minute)
	r.stop(time.Minute)
	tl, aborted := s.verifyExactlyOnce()
	s.report(tl, fmt.Sprintf("paused_at=%d resumes=%d aborted_invisible=%d", held, resumes, aborted))
}

// writeSLO adds an slo block to the scenario topology's dirty section.
func writeSLO(t *testing.T, s *scenario, block string) {
	t.Helper()
	b, err := os.ReadFile(s.config)
	if err != nil {
		t.Fatal(err)
	}
	dirty := "topic: " + s.topicOf["dirty"] + "\n"
	if !strings.Contains(string(b), dirty) {
		t.Fatalf("topology has no %q", dirty)
	}
	y := strings.Replace(string(b), dirty, dirty+block, 1)
	if err := os.WriteFile(s.config, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
}

// resume POSTs /resume with the bearer token (none when empty).
func resume(t *testing.T, r *router, token string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/resume", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpc.Do(req)
	if err != nil {
		t.Fatalf("POST /resume: %v", err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// objectiveLines are the objective series of the router's /metrics.
func objectiveLines(r *router) string {
	_, b, err := r.get("/metrics")
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "sidestream_objective_") || strings.HasPrefix(l, "sidestream_records_dirty_total") && !strings.HasSuffix(l, " 0") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
