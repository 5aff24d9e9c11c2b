package itest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Sizes of BenchmarkScaleOutPause: the input rate, and the windows the
// pauses are measured in.
const (
	scaleOutRate     = 3000             // records/s, over the 6 input partitions
	scaleOutSeconds  = 90               // of input at that rate: longer than the phases below
	scaleOutBaseline = 10 * time.Second // steady output before the join
	scaleOutAfter    = 10 * time.Second // after the group is stable with 4 and committing
)

// BenchmarkScaleOutPause measures how long output stops when a fourth
// router joins a group of three (issue 37's growth figure; no target).
// Three routers run the scenario's exactly-once stateless topology
// (examples/logs-by-level.yaml) while a producer writes 3,000 records/s
// to the 6-partition input; a live read_committed reader notes when each
// output record becomes visible. After a steady window a fourth router
// starts; once the group is stable with four members and commits again,
// output is watched a while longer. Each input partition's owner is read
// from the routers' GET /tasks before the join and after it.
//
// The pause of an input partition is the longest time, inside the window
// from the fourth router's start to the end of the watch, in which the
// reader saw no output record from that partition (an output record maps
// to its input partition through its event id, and the event to the
// partition its producer's acknowledgement named). Its metrics:
//
//	unmoved_pause_ms   longest pause over the partitions whose owner did not change
//	moved_pause_ms     longest pause over the partitions that moved
//	baseline_pause_ms  the same measure over all partitions in the steady
//	                   window before the join: the noise floor (commit
//	                   interval, the reader's fetches, a busy machine)
//	join_stable_ms     from the fourth router's start (process start
//	                   included) to the group seen Stable with 4 members,
//	                   polled every 100 ms
//	rebalance_ms       the rebalance as the routers' logs show it: from
//	                   the first "partitions revoked" or "partitions
//	                   assigned" line any router wrote after the fourth
//	                   one started to the last one before the watch
//	                   ended (millisecond log timestamps)
//	moved_partitions   how many input partitions changed owner
//
// A run's figures count only if its output is exactly once: after the
// watch every router catches up and stops, and the outputs are read back
// read_committed against the generator's oracle (verifyExactlyOnce); a
// run that fails that check fails the benchmark. With -benchtime above
// 1x every iteration is a fresh scenario and each metric is the largest
// of them; repeat with -count instead, for benchstat.
//
// It needs a real broker (scripts/kafka.sh up) and runs about two minutes.
// The classic group protocol (the router's own):
//
//	SIDESTREAM_IT_BROKERS=127.0.0.1:19092 go test ./itest -run '^$' \
//	  -bench BenchmarkScaleOutPause -benchtime 1x -count 3 -timeout 20m
//
// KIP-848's consumer protocol (the router built with -tags
// sidestream_kip848), on a Kafka 4.x broker whose consumer-group session
// is 6 s like the classic runs' --session-timeout (scripts/compat.sh's
// KIP848_BROKER_CONFIG, applied at format time, so on a fresh data dir):
//
//	SIDESTREAM_KAFKA_EXTRA_CONFIG="$(printf '%s\n' \
//	  group.consumer.min.session.timeout.ms=6000 group.consumer.session.timeout.ms=6000 \
//	  group.consumer.min.heartbeat.interval.ms=1000 group.consumer.heartbeat.interval.ms=2000)" \
//	  scripts/kafka.sh up
//	SIDESTREAM_IT_BROKERS=127.0.0.1:19092 SIDESTREAM_IT_GROUP_PROTOCOL=consumer \
//	  go test ./itest -run '^$' -bench BenchmarkScaleOutPause -benchtime 1x -count 3 -timeout 20m
//
// Such a broker serves classic groups too, so both commands can share it.
func BenchmarkScaleOutPause(b *testing.B) {
	var worst scaleOutFigures
	for range b.N {
		f := measureScaleOut(b)
		worst = scaleOutFigures{
			unmoved:  max(worst.unmoved, f.unmoved),
			moved:    max(worst.moved, f.moved),
			baseline: max(worst.baseline, f.baseline),
			stable:   max(worst.stable, f.stable),
			rebal:    max(worst.rebal, f.rebal),
			nMoved:   max(worst.nMoved, f.nMoved),
		}
	}
	b.ReportMetric(0, "ns/op") // the scenario's wall time says nothing
	b.ReportMetric(ms(worst.unmoved), "unmoved_pause_ms")
	b.ReportMetric(ms(worst.moved), "moved_pause_ms")
	b.ReportMetric(ms(worst.baseline), "baseline_pause_ms")
	b.ReportMetric(ms(worst.stable), "join_stable_ms")
	b.ReportMetric(ms(worst.rebal), "rebalance_ms")
	b.ReportMetric(float64(worst.nMoved), "moved_partitions")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// scaleOutFigures is one run's result.
type scaleOutFigures struct {
	unmoved, moved, baseline, stable, rebal time.Duration
	nMoved                                  int
}

// measureScaleOut runs one scale-out scenario and returns its figures.
func measureScaleOut(b *testing.B) scaleOutFigures {
	b.Helper()
	s := newScenario(b, "scale_out_pause", scaleOutRate*scaleOutSeconds)
	p := s.startProducer(scaleOutRate)
	routers := []*router{
		s.startRouter("a", fastGroup...),
		s.startRouter("b", fastGroup...),
		s.startRouter("c", fastGroup...),
	}
	s.waitMembers(3, 90*time.Second)
	_, n := s.committed()
	s.waitProgress(p, n, time.Minute, routers...)

	w := s.watchOutputs()
	waitFor(b, time.Minute, "the live reader's first output record", func() (bool, string) {
		return w.count() > 0, "none yet"
	})
	before := owners(b, routers)
	base := time.Now()
	time.Sleep(scaleOutBaseline)

	join := time.Now()
	routers = append(routers, s.startRouter("d", fastGroup...))
	s.waitMembers(4, 90*time.Second)
	stable := time.Since(join)
	_, n = s.committed()
	s.waitProgress(p, n, time.Minute, routers...)
	after := owners(b, routers)
	time.Sleep(scaleOutAfter)
	end := time.Now()
	// KIP-848 moves partitions one revocation at a time: what the
	// routers own at the end of the watch is the assignment.
	if final := owners(b, routers); !maps.Equal(final, after) {
		b.Logf("ownership changed during the watch: %v, then %v", after, final)
		after = final
	}
	if p.finished() {
		b.Fatalf("the input ended before the watch did (%s after the join): raise scaleOutSeconds", end.Sub(join).Round(time.Second))
	}

	s.waitCaughtUp(p, 3*time.Minute, routers...)
	for _, r := range routers {
		r.stop(40 * time.Second)
	}
	arrivals := w.stop(b)
	tl, aborted := s.verifyExactlyOnce()
	if b.Failed() {
		b.FailNow()
	}

	gaps := func(from, to time.Time) map[int32]time.Duration {
		return longestGaps(arrivals, func(ev int) int32 { return s.inputPart[ev].Load() }, inputPartitions, from, to)
	}
	baseline, pauses := gaps(base, join), gaps(join, end)
	var f scaleOutFigures
	f.stable = stable
	f.rebal = rebalanceSpan(b, routers, join, end)
	for _, d := range baseline {
		f.baseline = max(f.baseline, d)
	}
	var lines []string
	for _, part := range slices.Sorted(maps.Keys(before)) {
		moved := before[part] != after[part]
		if moved {
			f.nMoved++
			f.moved = max(f.moved, pauses[part])
		} else {
			f.unmoved = max(f.unmoved, pauses[part])
		}
		lines = append(lines, fmt.Sprintf("partition %d: %s -> %s, pause %s (baseline %s)",
			part, before[part], after[part], pauses[part].Round(time.Millisecond), baseline[part].Round(time.Millisecond)))
	}
	b.Logf("protocol %s; group stable with 4 members %s after the fourth router's start, rebalance %s in the logs\n%s",
		groupProtocolName(), stable.Round(time.Millisecond), f.rebal, strings.Join(lines, "\n"))
	if f.nMoved == 0 || f.nMoved == len(before) {
		b.Logf("%d of %d partitions moved: one of the two figures has nothing to measure", f.nMoved, len(before))
	}
	s.report(tl, fmt.Sprintf("protocol=%s aborted_invisible=%d unmoved_pause=%s moved_pause=%s baseline_pause=%s join_stable=%s rebalance=%s",
		groupProtocolName(), aborted, f.unmoved.Round(time.Millisecond), f.moved.Round(time.Millisecond),
		f.baseline.Round(time.Millisecond), stable.Round(time.Millisecond), f.rebal))
	return f
}

func groupProtocolName() string {
	if consumerProtocol() {
		return "consumer"
	}
	return "classic"
}

// owners maps every input partition to the router that owns it, from
// each router's GET /tasks, once each partition has exactly one owner:
// under KIP-848 the group can be Stable before every member has taken
// its assignment, and the routers are not read at one instant.
func owners(t testing.TB, routers []*router) map[int32]string {
	t.Helper()
	var own map[int32]string
	waitFor(t, time.Minute, "every input partition owned by exactly one router", func() (bool, string) {
		own = map[int32]string{}
		for _, r := range routers {
			for _, part := range r.tasks() {
				if o, ok := own[part]; ok {
					return false, fmt.Sprintf("partition %d owned by both %s and %s", part, o, r.id)
				}
				own[part] = r.id
			}
		}
		return len(own) == inputPartitions, fmt.Sprintf("owners %v", own)
	})
	return own
}

// rebalanceSpan reads the routers' logs for the rebalance the join
// caused: from the first "partitions revoked" or "partitions assigned"
// line stamped in [from, to] to the last one. Zero when there is none.
func rebalanceSpan(t testing.TB, routers []*router, from, to time.Time) time.Duration {
	t.Helper()
	var first, last time.Time
	for _, r := range routers {
		for _, l := range r.logLines(0, `msg="partitions revoked"`, `msg="partitions assigned"`) {
			v, _, _ := strings.Cut(strings.TrimPrefix(l, "time="), " ")
			at, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				t.Fatalf("router %s log line without a time: %q", r.id, l)
			}
			// Stamps are in ms: a line of the join's own millisecond counts.
			if at.Before(from.Truncate(time.Millisecond)) || at.After(to) {
				continue
			}
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
	}
	return last.Sub(first)
}

// arrival is when the live reader saw the output of an event (its index
// in scenario.events).
type arrival struct {
	ev int
	at time.Time
}

// outputWatch is a read_committed reader of a scenario's output topics
// from their ends, noting when each record became visible to it.
type outputWatch struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	arrivals []arrival
	err      error
}

// watchOutputs starts the live reader; stop ends it. Records are timed
// when the fetch that holds them returns: a read_committed fetch returns
// once the last stable offset moves, so the time is within a fetch's
// round trip of the commit that made them visible.
func (s *scenario) watchOutputs() *outputWatch {
	s.t.Helper()
	index := make(map[string]int, len(s.events))
	for i := range s.events {
		index[s.events[i].ID] = i
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...), kgo.ConsumeTopics(s.outputs...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &outputWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer cl.Close()
		for {
			fs := cl.PollFetches(ctx)
			at := time.Now()
			if ctx.Err() != nil {
				return
			}
			var batch []arrival
			var ferr error
			fs.EachError(func(t string, p int32, err error) {
				ferr = errors.Join(ferr, fmt.Errorf("%s/%d: %w", t, p, err))
			})
			fs.EachRecord(func(r *kgo.Record) {
				i, ok := index[s.recordID(r.Key, r.Value)]
				if !ok {
					ferr = errors.Join(ferr, fmt.Errorf("%s/%d@%d: no such event id", r.Topic, r.Partition, r.Offset))
					return
				}
				batch = append(batch, arrival{ev: i, at: at})
			})
			w.mu.Lock()
			w.arrivals = append(w.arrivals, batch...)
			if ferr != nil && w.err == nil {
				w.err = ferr
			}
			w.mu.Unlock()
		}
	}()
	s.t.Cleanup(func() { cancel(); <-w.done })
	return w
}

func (w *outputWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.arrivals)
}

// stop ends the reader and returns what it saw; a fetch error or a
// record of no known event fails the run.
func (w *outputWatch) stop(t testing.TB) []arrival {
	t.Helper()
	w.cancel()
	<-w.done
	if w.err != nil {
		t.Fatalf("live output reader: %v", w.err)
	}
	return w.arrivals
}

// longestGaps returns, for each input partition below parts, the longest
// time without an arrival of that partition that ends inside (from, to]:
// from its last arrival at or before from (from itself when it had none)
// to each next one, and from its last one to to. A pause that began just
// before from counts whole: a downstream reader waited all of it.
func longestGaps(arr []arrival, partOf func(ev int) int32, parts int, from, to time.Time) map[int32]time.Duration {
	times := map[int32][]time.Time{}
	for _, a := range arr {
		if !a.at.After(to) {
			times[partOf(a.ev)] = append(times[partOf(a.ev)], a.at)
		}
	}
	out := map[int32]time.Duration{}
	for p := range int32(parts) {
		ts := times[p]
		slices.SortFunc(ts, time.Time.Compare)
		last := from
		var longest time.Duration
		for _, t := range ts {
			if !t.After(from) {
				last = t
				continue
			}
			longest = max(longest, t.Sub(last))
			last = t
		}
		out[p] = max(longest, to.Sub(last))
	}
	return out
}

// TestLongestGaps checks the pause arithmetic of BenchmarkScaleOutPause;
// it needs no broker.
func TestLongestGaps(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Events 0-4 are on partition 0, 5-6 on partition 1; partition 2 has none.
	partOf := func(ev int) int32 { return int32(min(ev/5, 1)) }
	arr := []arrival{
		{0, at(0)}, {1, at(900)}, {2, at(1000)}, {3, at(1800)}, {4, at(5000)}, // 4 is after the window
		{5, at(1500)}, {6, at(1200)}, // out of order
	}
	got := longestGaps(arr, partOf, 3, at(500), at(2000))
	want := map[int32]time.Duration{
		0: 900 * time.Millisecond,  // from 0 (before the window) to 900
		1: 700 * time.Millisecond,  // none before the window: from its start (500) to 1200
		2: 1500 * time.Millisecond, // none at all: the whole window
	}
	if !maps.Equal(got, want) {
		t.Errorf("longestGaps = %v, want %v", got, want)
	}
}
