package itest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/plan"
	"github.com/sidestream/sidestream/internal/wire"
)

// TestHotReload: while records flow, the router is reloaded 10 times
// (POST /reload) between two predicate sets (the error and warn routes'
// predicates swapped). Under exactly-once a concurrent read_committed
// reader sees every record once, on the route its version header says,
// and the output never pauses longer than three commit intervals; under
// at-least-once the reloads lose nothing.
func TestHotReload(t *testing.T) {
	for _, g := range []config.Guarantee{config.ExactlyOnce, config.AtLeastOnce} {
		t.Run(string(g), func(t *testing.T) { hotReload(t, g) })
	}
}

func hotReload(t *testing.T, g config.Guarantee) {
	const n, rate = 60_000, 3_000.0
	s := newScenario(t, "reload-"+strings.ReplaceAll(string(g), "_", ""), n)
	defer s.cleanup()
	b, err := os.ReadFile(s.config)
	if err != nil {
		t.Fatal(err)
	}
	v1src := strings.Replace(string(b), "guarantee: exactly_once", "guarantee: "+string(g), 1)
	v2src := strings.NewReplacer(`when: level == "ERROR"`, `when: level == "WARN"`, `when: level == "WARN"`, `when: level == "ERROR"`).Replace(v1src)
	v1, v2 := s.compileText(v1src), s.compileText(v2src)
	s.writeConfig(v1src)

	r := s.startRouter("a")
	r.waitReady(time.Minute)
	rd := s.startReader()
	p := s.startProducer(rate)
	var from int64
	from = s.waitProgress(p, from, time.Minute, r)
	interval := v1.Settings.CommitInterval.D()
	firstReload := time.Now()
	for i := range 10 {
		src, want := v2src, v2.Version
		if i%2 == 1 {
			src, want = v1src, v1.Version
		}
		s.writeConfig(src)
		code, o := r.reload()
		if code != http.StatusOK || o.Outcome != "applied" || o.Version != want {
			t.Fatalf("reload %d: %d %+v", i, code, o)
		}
		from = s.waitProgress(p, from+n/15, time.Minute, r) // spread over the run
	}
	lastReload := time.Now()
	s.waitCaughtUp(p, 3*time.Minute, r)
	r.stop(time.Minute)
	gap := rd.stop(firstReload, lastReload)

	recs := s.readTopics(s.outputs, true, 2*time.Minute)
	versions := s.verifyVersions(v1, v2, recs, g == config.ExactlyOnce)
	if versions[v1.Version] == 0 || versions[v2.Version] == 0 {
		t.Fatalf("records by version %v: want both %s and %s", versions, v1.Version, v2.Version)
	}
	t.Logf("records by version %v; longest pause of the read_committed reader while reloading: %s", versions, gap)
	if g == config.ExactlyOnce && gap > 3*interval {
		t.Errorf("the read_committed output paused %s while reloading, over three commit intervals (%s)", gap, 3*interval)
	}
	s.report(tally{records: len(recs)}, fmt.Sprintf("reloads=10 longest_pause=%s", gap))
}

// compileText compiles a topology text written in the scenario's dir.
func (s *scenario) compileText(src string) *plan.Plan {
	s.t.Helper()
	cfg, err := config.Load(s.config, []byte(src))
	if err != nil {
		s.t.Fatal(err)
	}
	top, err := plan.Compile(cfg, s.dir+"/")
	if err != nil {
		s.t.Fatal(err)
	}
	return top
}

func (s *scenario) writeConfig(src string) {
	s.t.Helper()
	if err := os.WriteFile(s.config, []byte(src), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// reloadOutcome is what POST /reload answers.
type reloadOutcome struct {
	Outcome string `json:"outcome"`
	Version string `json:"version"`
	Error   string `json:"error"`
}

func (r *router) reload() (int, reloadOutcome) {
	r.s.t.Helper()
	resp, err := (&http.Client{Timeout: time.Minute}).Post("http://"+r.addr+"/reload", "application/json", nil)
	if err != nil {
		r.s.t.Fatalf("POST /reload: %v", err)
	}
	defer resp.Body.Close()
	var o reloadOutcome
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		r.s.t.Fatalf("POST /reload %d: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, o
}

// verifyVersions: every event on the topic its record's version header
// routes it to (v2 swaps the error and warn predicates of v1), once
// (exactly) or at least once; it returns the records by version.
func (s *scenario) verifyVersions(v1, v2 *plan.Plan, recs []*kgo.Record, exactly bool) map[string]int {
	s.t.Helper()
	seen := map[string]int{}
	versions := map[string]int{}
	bad := 0
	for _, r := range recs {
		id := s.recordID(r.Key, r.Value)
		ev, ok := s.byID[id]
		if !ok {
			s.t.Fatalf("record on %s with unknown id %q", r.Topic, id)
		}
		seen[id]++
		v := wire.String(r.Headers, wire.HeaderTopologyVersion)
		versions[v]++
		kind := ev.Kind
		switch {
		case v == v2.Version && kind == gen.KindError:
			kind = gen.KindWarn
		case v == v2.Version && kind == gen.KindWarn:
			kind = gen.KindError
		case v != v1.Version && v != v2.Version:
			s.t.Fatalf("id %s on %s names version %q, neither %s nor %s", id, r.Topic, v, v1.Version, v2.Version)
		}
		if want := s.topicOf[gen.RouteOf[kind]]; r.Topic != want {
			if bad++; bad <= 5 {
				s.t.Errorf("id %s (kind %s) on %s under version %s, want %s", id, ev.Kind, r.Topic, v, want)
			}
		}
	}
	missing, dups := 0, 0
	for id := range s.byID {
		switch n := seen[id]; {
		case n == 0:
			missing++
		case n > 1:
			dups++
		}
	}
	if missing > 0 || bad > 0 || (exactly && dups > 0) {
		s.t.Fatalf("%d events: %d missing, %d misrouted for their version, %d written more than once (exactly-once: %v)", len(s.events), missing, bad, dups, exactly)
	}
	return versions
}

// reader is a read_committed consumer of the outputs that notes when
// records arrive.
type reader struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	times  []time.Time // arrival of each poll that returned records
}

func (s *scenario) startReader() *reader {
	s.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...), kgo.ConsumeTopics(s.outputs...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rd := &reader{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rd.done)
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.NumRecords() > 0 {
				rd.mu.Lock()
				rd.times = append(rd.times, time.Now())
				rd.mu.Unlock()
			}
			fs.EachError(func(t string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					s.t.Errorf("reader %s/%d: %v", t, p, err)
				}
			})
		}
	}()
	s.t.Cleanup(func() { cancel(); <-rd.done })
	return rd
}

// stop ends the reader and returns the longest time without records
// between from and to.
func (rd *reader) stop(from, to time.Time) time.Duration {
	rd.cancel()
	<-rd.done
	rd.mu.Lock()
	defer rd.mu.Unlock()
	var longest time.Duration
	last := from
	for _, at := range rd.times {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			longest = max(longest, at.Sub(last))
			break
		}
		longest = max(longest, at.Sub(last))
		last = at
	}
	return longest
}
