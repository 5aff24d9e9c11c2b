package itest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/gen"
	"github.com/sidestream/sidestream/internal/plan"
)

// inputPartitions is the partition count of every scenario's input topic.
const inputPartitions = 6

// scenario is one test's world: its own input topic, output topics,
// application id (= consumer group = transactional id prefix), topology
// file, generated events and oracle counts.
type scenario struct {
	t       testing.TB
	name    string
	app     string
	input   string
	outputs []string          // sorted
	topicOf map[string]string // route name (incl. "dirty") -> topic
	dir     string
	config  string
	brokers []string
	cl      *kgo.Client
	adm     *kadm.Client
	rng     *rand.Rand

	events []gen.Event
	byID   map[string]*gen.Event
	want   map[string]int // oracle: output topic -> records
	// inputPart is the input partition each event was written to, as the
	// producer's acknowledgement names it (-1 until then).
	inputPart []atomic.Int32

	started time.Time
	// stamp, when set, is the Kafka timestamp of event i (a replay of
	// old data); otherwise the producer's clock.
	stamp func(i int) time.Time
	// idOf, when set, finds an output record's event id (a registry
	// format's frames are passed through, not JSON); otherwise gen.IDOf.
	idOf     func(key, value []byte) string
	kills    int
	restarts int

	mu      sync.Mutex
	routers []*router
}

// newScenario skips without a broker; otherwise it writes the example
// topology with unique names into a temp dir, creates the input topic
// and generates n events (not yet produced).
func newScenario(t testing.TB, name string, n int) *scenario {
	t.Helper()
	brokers := os.Getenv(envBrokers)
	if brokers == "" {
		t.Skipf("%s is not set: no real broker (scripts/kafka.sh up)", envBrokers)
	}
	seed := scenarioSeed(t)
	t.Logf("seed %d (SIDESTREAM_IT_SEED=%d repeats the data and the fault schedule, not the timing)", seed, seed)
	prefix := "it-" + name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	s := &scenario{
		t:       t,
		name:    name,
		app:     prefix,
		input:   prefix + ".logs",
		dir:     t.TempDir(),
		brokers: strings.Split(brokers, ","),
		rng:     rand.New(rand.NewPCG(seed, seed>>1|1)),
		byID:    make(map[string]*gen.Event, n),
		want:    map[string]int{},
		started: time.Now(),
	}
	s.writeTopology(prefix)

	s.connect()
	s.generate(seed, n)
	return s
}

// scenarioSeed is SIDESTREAM_IT_SEED, or a fresh seed.
func scenarioSeed(t testing.TB) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SIDESTREAM_IT_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("SIDESTREAM_IT_SEED=%q: %v", v, err)
		}
	}
	return seed
}

// generate makes the scenario's n events from seed and the oracle's
// count of each output topic.
func (s *scenario) generate(seed uint64, n int) {
	g := gen.New(seed)
	s.events = make([]gen.Event, n)
	s.inputPart = make([]atomic.Int32, n)
	for i := range s.events {
		s.events[i] = g.Next()
		s.inputPart[i].Store(-1)
		ev := &s.events[i]
		s.byID[ev.ID] = ev
		s.want[s.topicOf[gen.RouteOf[ev.Kind]]]++
	}
}

// writeTopology copies examples/logs-by-level.yaml and its schema into the
// scenario's dir with the application id and every topic renamed, then
// compiles it to learn each route's topic.
func (s *scenario) writeTopology(prefix string) {
	t := s.t
	src, err := os.ReadFile("../examples/logs-by-level.yaml")
	if err != nil {
		t.Fatal(err)
	}
	y := string(src)
	for _, r := range [][2]string{
		{"application_id: logs-by-level\n", "application_id: " + s.app + "\n"},
		{"  - topic: logs\n", "  - topic: " + s.input + "\n"},
		{"topic: logs.", "topic: " + prefix + "."},
	} {
		if !strings.Contains(y, r[0]) {
			t.Fatalf("examples/logs-by-level.yaml changed: %q not found; update itest.writeTopology", r[0])
		}
		y = strings.ReplaceAll(y, r[0], r[1])
	}
	s.config = filepath.Join(s.dir, "topology.yaml")
	schema, err := os.ReadFile("../examples/schemas/log-event.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(s.dir, "schemas"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "schemas", "log-event.json"), schema, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.config, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadFile(s.config)
	if err != nil {
		t.Fatalf("per-test topology: %v", err)
	}
	top, err := plan.Compile(cfg, s.dir+"/")
	if err != nil {
		t.Fatalf("per-test topology: %v", err)
	}
	if in := top.InputTopics(); !slices.Equal(in, []string{s.input}) {
		t.Fatalf("per-test topology reads %v, want [%s]", in, s.input)
	}
	s.topicOf = map[string]string{"dirty": top.Dirty.Topic}
	for _, r := range top.Routes {
		s.topicOf[r.Name] = r.Topic
	}
	for kind, route := range gen.RouteOf {
		if tp := s.topicOf[route]; !strings.HasPrefix(tp, prefix+".") {
			t.Fatalf("oracle route %q (kind %s) has topic %q, not one of this test's", route, kind, tp)
		}
	}
	s.outputs = top.OutputTopics()
	sort.Strings(s.outputs)
}

// cleanup runs after every router of the test is dead: it prints the
// routers' logs when the test failed, else deletes the test's topics and
// group so the broker stays small.
func (s *scenario) cleanup() {
	if dir := os.Getenv("SIDESTREAM_IT_LOGS"); dir != "" {
		s.keepLogs(dir)
	}
	if consumerProtocol() {
		s.requireConsumerProtocol()
	}
	if s.t.Failed() {
		s.mu.Lock()
		seen := map[string]bool{}
		for _, r := range s.routers {
			if !seen[r.logPath] {
				seen[r.logPath] = true
				s.t.Logf("last lines of %s:\n%s", filepath.Base(r.logPath), tail(r.logPath, 60))
			}
		}
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _ = s.adm.DeleteGroup(ctx, s.app)
	_, _ = s.adm.DeleteTopics(ctx, append([]string{s.input}, s.outputs...)...)
}

// requireConsumerProtocol fails the test unless its routers managed
// their group with KIP-848's protocol: franz-go logs which lifecycle it
// begins, and falls back to the classic one, saying so, when the broker
// or the balancer does not allow KIP-848.
func (s *scenario) requireConsumerProtocol() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.routers) == 0 {
		return
	}
	nextGen := 0
	for _, r := range s.routers {
		nextGen += len(r.logLines(0, "beginning to manage the next-gen group lifecycle"))
		if l := r.logLines(0, "falling back to standard consumer group management", "beginning to manage the group lifecycle"); len(l) > 0 {
			s.t.Errorf("%s=consumer, but router %s used the classic protocol: %s", envGroupProtocol, r.id, l[0])
		}
	}
	if nextGen == 0 {
		s.t.Errorf("%s=consumer, but no router logged the next-gen (KIP-848) group lifecycle", envGroupProtocol)
	}
}

// keepLogs copies the routers' logs to dir (SIDESTREAM_IT_LOGS) as
// SCENARIO-router-ID.log.
func (s *scenario) keepLogs(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Errorf("SIDESTREAM_IT_LOGS: %v", err)
		return
	}
	for _, r := range s.routers {
		b, err := os.ReadFile(r.logPath)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, s.name+"-"+filepath.Base(r.logPath)), b, 0o644)
		}
		if err != nil {
			s.t.Errorf("SIDESTREAM_IT_LOGS: %v", err)
		}
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// randDur is uniform in [lo, hi).
func (s *scenario) randDur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// ---------------------------------------------------------------- producer

// producer writes the scenario's events to its input topic at a rate, in a
// goroutine, so faults hit the router while input keeps arriving.
type producer struct {
	n      int
	done   chan struct{}
	acked  atomic.Int64
	err    atomic.Pointer[error]
	took   time.Duration
	cancel context.CancelFunc
}

// startProducer writes every event, keyed by its id, at rate records per
// second (0: as fast as possible).
func (s *scenario) startProducer(rate float64) *producer {
	return s.startProducerRange(0, len(s.events), rate)
}

// startProducerRange writes events [from, to) like startProducer. The
// caller writes the rest, in order, so that waitCaughtUp can finish.
func (s *scenario) startProducerRange(from, to int, rate float64) *producer {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...), kgo.DefaultProduceTopic(s.input))
	if err != nil {
		s.t.Fatal(err)
	}
	// A scenario may replace its events after newScenario (the assembly
	// tests write parts, the changelog tests grow them): inputPart grows
	// to them here, in the test's goroutine, and each producer's
	// callbacks write the slice it started with.
	if len(s.inputPart) < len(s.events) {
		grown := make([]atomic.Int32, len(s.events))
		for i := range grown {
			v := int32(-1)
			if i < len(s.inputPart) {
				v = s.inputPart[i].Load()
			}
			grown[i].Store(v)
		}
		s.inputPart = grown
	}
	parts := s.inputPart
	ctx, cancel := context.WithCancel(context.Background())
	p := &producer{n: to - from, done: make(chan struct{}), cancel: cancel}
	fail := func(err error) { p.err.CompareAndSwap(nil, &err) }
	go func() {
		defer close(p.done)
		defer cl.Close()
		start := time.Now()
		for i := range to - from {
			ev := &s.events[from+i]
			if rate > 0 && i%100 == 0 {
				due := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
				if d := time.Until(due); d > 0 {
					tm := time.NewTimer(d)
					select {
					case <-ctx.Done():
						tm.Stop()
						return
					case <-tm.C:
					}
				}
			}
			rec := &kgo.Record{Key: ev.Key, Value: ev.Value}
			if s.stamp != nil {
				rec.Timestamp = s.stamp(from + i)
			}
			cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
				if err != nil {
					fail(err)
					return
				}
				parts[from+i].Store(r.Partition)
				p.acked.Add(1)
			})
		}
		if err := cl.Flush(ctx); err != nil {
			fail(err)
		}
		p.took = time.Since(start)
	}()
	s.t.Cleanup(func() { cancel(); <-p.done })
	return p
}

func (p *producer) finished() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait blocks until every event is acknowledged by the broker.
func (p *producer) wait(t testing.TB, limit time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("producer: %d of %d records acknowledged after %s", p.acked.Load(), p.n, limit)
	}
	if e := p.err.Load(); e != nil {
		t.Fatalf("producer: %v", *e)
	}
	if got := p.acked.Load(); got != int64(p.n) {
		t.Fatalf("producer: %d of %d records acknowledged", got, p.n)
	}
}

// ---------------------------------------------------------------- routers

// router is one `router run` process.
type router struct {
	s       *scenario
	id      string
	addr    string
	extra   []string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	started time.Time
}

var httpc = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// freeAddr finds a free loopback port for a router's HTTP API.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startRouter runs `router run` on the scenario's topology as instance id,
// with extra flags; it does not wait for readiness.
func (s *scenario) startRouter(id string, extra ...string) *router {
	s.t.Helper()
	return s.startRouterEnv(id, s.brokers, nil, extra...)
}

// restart starts a new process with the same instance id and flags.
func (r *router) restart() *router {
	r.s.t.Helper()
	if !r.exited() {
		r.s.t.Fatalf("restart of router %s while it still runs", r.id)
	}
	r.s.restarts++
	return r.s.startRouter(r.id, r.extra...)
}

func (r *router) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// kill is the cleanup: SIGKILL (a stopped process dies too) and reap.
func (r *router) kill() {
	if r.exited() {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.s.t.Errorf("router %s (pid %d) survived SIGKILL for 10s", r.id, r.cmd.Process.Pid)
	}
}

// kill9 is the fault: SIGKILL at once, no chance to end anything.
func (r *router) kill9() {
	r.s.t.Helper()
	if r.exited() {
		r.s.t.Fatalf("router %s exited by itself before its kill: %s", r.id, r.cmd.ProcessState)
	}
	r.kill()
	r.s.kills++
}

func (r *router) signal(sig syscall.Signal) {
	r.s.t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.s.t.Fatalf("signal %s to router %s: %v", sig, r.id, err)
	}
}

// term sends SIGTERM and waits up to limit; it returns the exit code and
// how long the process took to exit.
func (r *router) term(limit time.Duration) (int, time.Duration) {
	r.s.t.Helper()
	if r.exited() {
		r.s.t.Fatalf("router %s exited by itself before SIGTERM: %s", r.id, r.cmd.ProcessState)
	}
	start := time.Now()
	r.signal(syscall.SIGTERM)
	select {
	case <-r.done:
		return r.cmd.ProcessState.ExitCode(), time.Since(start)
	case <-time.After(limit):
		r.s.t.Fatalf("router %s still running %s after SIGTERM", r.id, limit)
		return -1, limit
	}
}

// stop ends the router gracefully and requires exit code 0.
func (r *router) stop(limit time.Duration) time.Duration {
	r.s.t.Helper()
	code, took := r.term(limit)
	if code != 0 {
		r.s.t.Fatalf("router %s exited with code %d after SIGTERM (%s)", r.id, code, r.cmd.ProcessState)
	}
	return took
}

func (r *router) get(path string) (int, []byte, error) {
	resp, err := httpc.Get("http://" + r.addr + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// readyz returns /readyz's status code (0 when the API does not answer)
// and its body.
func (r *router) readyz() (int, string) {
	code, b, err := r.get("/readyz")
	if err != nil {
		return 0, err.Error()
	}
	return code, strings.TrimSpace(string(b))
}

func (r *router) waitReady(limit time.Duration) {
	r.s.t.Helper()
	waitFor(r.s.t, limit, "router "+r.id+" /readyz 200", func() (bool, string) {
		if r.exited() {
			r.s.t.Fatalf("router %s exited while starting: %s\n%s", r.id, r.cmd.ProcessState, tail(r.logPath, 20))
		}
		code, body := r.readyz()
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
}

// requireRunning fails the test when a router of live exited by itself.
func requireRunning(t testing.TB, live ...*router) {
	t.Helper()
	for _, r := range live {
		if r.exited() {
			t.Fatalf("router %s exited by itself: %s\n%s", r.id, r.cmd.ProcessState, tail(r.logPath, 20))
		}
	}
}

// tasks lists the input partitions the router says it owns.
func (r *router) tasks() []int32 {
	r.s.t.Helper()
	code, b, err := r.get("/tasks")
	if err != nil || code != http.StatusOK {
		r.s.t.Fatalf("GET /tasks on router %s: %d %v", r.id, code, err)
	}
	var ts []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
	}
	if err := json.Unmarshal(b, &ts); err != nil {
		r.s.t.Fatalf("GET /tasks on router %s: %v: %s", r.id, err, b)
	}
	var out []int32
	for _, x := range ts {
		if x.Topic == r.s.input {
			out = append(out, x.Partition)
		}
	}
	return out
}

// logSince returns the router's log lines written after offset bytes
// that contain any of the words.
func (r *router) logLines(offset int64, words ...string) []string {
	b, err := os.ReadFile(r.logPath)
	if err != nil || int64(len(b)) < offset {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b[offset:]), "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

func (r *router) logSize() int64 {
	st, err := os.Stat(r.logPath)
	if err != nil {
		return 0
	}
	return st.Size()
}

// ---------------------------------------------------------------- group, offsets

// committed returns the group's committed input offsets per partition
// and their sum (records whose effect is committed).
func (s *scenario) committed() (map[int32]int64, int64) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := s.adm.FetchOffsets(ctx, s.app)
	if err != nil {
		return nil, -1 // the broker may be bouncing; callers poll
	}
	out := map[int32]int64{}
	var sum int64
	for p, o := range resp[s.input] {
		if o.Err == nil && o.At >= 0 {
			out[p] = o.At
			sum += o.At
		}
	}
	return out, sum
}

// waitProgress waits until the group has committed more than from, or
// everything there is; it returns the new sum.
func (s *scenario) waitProgress(p *producer, from int64, limit time.Duration, live ...*router) int64 {
	s.t.Helper()
	from = max(from, 0) // -1: the broker did not answer
	var sum int64
	waitFor(s.t, limit, fmt.Sprintf("group commits past %d input records", from), func() (bool, string) {
		_, sum = s.committed()
		if sum > from || (p.finished() && sum == int64(len(s.events))) {
			return true, ""
		}
		requireRunning(s.t, live...)
		return false, fmt.Sprintf("committed %d of %d", sum, len(s.events))
	})
	return sum
}

// waitCaughtUp waits until every produced record is committed: the group's
// lag on the input is 0.
func (s *scenario) waitCaughtUp(p *producer, limit time.Duration, live ...*router) {
	s.t.Helper()
	start := time.Now()
	p.wait(s.t, limit)
	waitFor(s.t, limit-time.Since(start), "input lag 0", func() (bool, string) {
		_, sum := s.committed()
		if sum == int64(len(s.events)) {
			return true, ""
		}
		if sum > int64(len(s.events)) {
			s.t.Fatalf("committed offsets sum %d is past the %d records produced", sum, len(s.events))
		}
		requireRunning(s.t, live...)
		return false, fmt.Sprintf("committed %d of %d", sum, len(s.events))
	})
}

// groupView is what the tests read of the consumer group, from
// DescribeGroups for the classic protocol and ConsumerGroupDescribe for
// KIP-848's (which DescribeGroups does not describe).
type groupView struct {
	State    string
	Members  []string       // member ids
	Assigned map[string]int // topic -> partitions assigned to a member
}

// group describes the consumer group. Under KIP-848's protocol a group
// the broker does not know as a consumer group (a classic one) is an
// error: the describe proves the protocol in use.
func (s *scenario) group() (groupView, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var v groupView
	if consumerProtocol() {
		gs, err := s.adm.DescribeConsumerGroups(ctx, s.app)
		if err != nil {
			return v, err
		}
		g, ok := gs[s.app]
		if !ok {
			return v, fmt.Errorf("consumer group %s not described", s.app)
		}
		v = groupView{State: g.State, Assigned: map[string]int{}}
		for _, m := range g.Members {
			v.Members = append(v.Members, m.MemberID)
		}
		for t, ps := range g.AssignedPartitions() {
			v.Assigned[t] = len(ps)
		}
		return v, g.Err
	}
	gs, err := s.adm.DescribeGroups(ctx, s.app)
	if err != nil {
		return v, err
	}
	g, ok := gs[s.app]
	if !ok {
		return v, fmt.Errorf("group %s not described", s.app)
	}
	v = groupView{State: g.State, Assigned: map[string]int{}}
	for _, m := range g.Members {
		v.Members = append(v.Members, m.MemberID)
	}
	for t, ps := range g.AssignedPartitions() {
		v.Assigned[t] = len(ps)
	}
	return v, g.Err
}

// waitMembers waits until the group is stable with n members that own
// every input partition between them.
func (s *scenario) waitMembers(n int, limit time.Duration) {
	s.t.Helper()
	waitFor(s.t, limit, fmt.Sprintf("group %s stable with %d members", s.app, n), func() (bool, string) {
		g, err := s.group()
		if err != nil {
			return false, err.Error()
		}
		owned := g.Assigned[s.input]
		return g.State == "Stable" && len(g.Members) == n && owned == inputPartitions,
			fmt.Sprintf("state %s, %d members, %d partitions assigned", g.State, len(g.Members), owned)
	})
}

// memberIDs lists the group's member ids (nil when the broker does not
// answer).
func (s *scenario) memberIDs() []string {
	g, err := s.group()
	if err != nil {
		return nil
	}
	return g.Members
}

// waitMembersChanged is waitMembers for a group whose membership must also
// differ from before (a member was replaced).
func (s *scenario) waitMembersChanged(n int, before []string, limit time.Duration) {
	s.t.Helper()
	start := time.Now()
	slices.Sort(before)
	waitFor(s.t, limit, fmt.Sprintf("group membership other than %v", before), func() (bool, string) {
		now := s.memberIDs()
		slices.Sort(now)
		return len(now) > 0 && !slices.Equal(now, before), fmt.Sprintf("members %v", now)
	})
	s.waitMembers(n, limit-time.Since(start))
}

// ---------------------------------------------------------------- read-back

// outRec is one record read back from an output topic.
type outRec struct {
	topic      string
	key, value []byte
}

// waitSettled waits until no transaction is open on any output partition
// (last stable offset = high watermark) and returns the high watermarks.
func (s *scenario) waitSettled(limit time.Duration) map[string]map[int32]int64 {
	s.t.Helper()
	return s.waitTopicsSettled(s.outputs, limit)
}

// waitTopicsSettled is waitSettled for any topics (e.g. internal ones).
func (s *scenario) waitTopicsSettled(topics []string, limit time.Duration) map[string]map[int32]int64 {
	s.t.Helper()
	var ends map[string]map[int32]int64
	waitFor(s.t, limit, fmt.Sprintf("no open transaction on %v", topics), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		hwm, err1 := s.adm.ListEndOffsets(ctx, topics...)
		lso, err2 := s.adm.ListCommittedOffsets(ctx, topics...)
		cancel()
		if err := errors.Join(err1, err2, hwm.Error(), lso.Error()); err != nil {
			return false, err.Error()
		}
		ends = map[string]map[int32]int64{}
		open := 0
		hwm.Each(func(o kadm.ListedOffset) {
			if ends[o.Topic] == nil {
				ends[o.Topic] = map[int32]int64{}
			}
			ends[o.Topic][o.Partition] = o.Offset
			if l, ok := lso.Lookup(o.Topic, o.Partition); !ok || l.Offset != o.Offset {
				open++
			}
		})
		return open == 0, fmt.Sprintf("%d partitions have an open transaction", open)
	})
	return ends
}

// readBack reads every output topic from the start to the high watermark,
// read_committed or read_uncommitted. Control records are kept so the
// reader knows exactly when it reached each partition's end; they are not
// returned.
func (s *scenario) readBack(committed bool, limit time.Duration) []outRec {
	s.t.Helper()
	recs := s.readTopics(s.outputs, committed, limit)
	out := make([]outRec, 0, len(recs))
	for _, r := range recs {
		out = append(out, outRec{topic: r.Topic, key: r.Key, value: r.Value})
	}
	return out
}

// readTopics is readBack for any topics, returning whole records (headers,
// partition, offset), in offset order within each partition.
func (s *scenario) readTopics(topics []string, committed bool, limit time.Duration) []*kgo.Record {
	s.t.Helper()
	ends := s.waitTopicsSettled(topics, limit)
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.brokers...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords())
	if err != nil {
		s.t.Fatal(err)
	}
	defer cl.Close()
	pos := map[string]map[int32]int64{}
	behind := func() int {
		n := 0
		for t, ps := range ends {
			for p, end := range ps {
				if pos[t][p] < end {
					n++
				}
			}
		}
		return n
	}
	var out []*kgo.Record
	deadline := time.Now().Add(limit)
	for behind() > 0 {
		if time.Now().After(deadline) {
			s.t.Fatalf("read-back: %d partitions not read to their end after %s (%d records so far)", behind(), limit, len(out))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				s.t.Fatalf("read-back %s/%d: %v", t, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if pos[r.Topic] == nil {
				pos[r.Topic] = map[int32]int64{}
			}
			pos[r.Topic][r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

// tally is what a read-back holds, measured against the oracle.
type tally struct {
	records   int
	dups      int // records beyond the first of their id
	dupIDs    int // ids seen more than once
	missing   int
	misrouted int
	unknown   int
	byTopic   map[string]int
	seen      map[string]int
}

func (s *scenario) tally(recs []outRec) tally {
	tl := tally{records: len(recs), byTopic: map[string]int{}, seen: make(map[string]int, len(s.events))}
	for _, r := range recs {
		id := s.recordID(r.key, r.value)
		ev, ok := s.byID[id]
		if !ok {
			tl.unknown++
			continue
		}
		tl.byTopic[r.topic]++
		tl.seen[id]++
		switch tl.seen[id] {
		case 1:
		case 2:
			tl.dupIDs++
			tl.dups++
		default:
			tl.dups++
		}
		if want := s.topicOf[gen.RouteOf[ev.Kind]]; r.topic != want {
			tl.misrouted++
		}
	}
	for id := range s.byID {
		if tl.seen[id] == 0 {
			tl.missing++
		}
	}
	return tl
}

// recordID is the event id of an output record.
func (s *scenario) recordID(key, value []byte) string {
	if s.idOf != nil {
		return s.idOf(key, value)
	}
	return gen.IDOf(key, value)
}

// requireExactlyOnce: every event once, on the oracle's topic, and the
// per-topic counts are the oracle's.
func (s *scenario) requireExactlyOnce(tl tally) {
	s.t.Helper()
	s.requireNoLoss(tl)
	if tl.dups > 0 {
		s.t.Errorf("%d duplicate records (%d ids more than once)", tl.dups, tl.dupIDs)
	}
	for _, tp := range s.outputs {
		if tl.byTopic[tp] != s.want[tp] {
			s.t.Errorf("topic %s: %d records, the oracle says %d", tp, tl.byTopic[tp], s.want[tp])
		}
	}
}

// requireNoLoss: every event at least once, nothing misrouted or foreign.
func (s *scenario) requireNoLoss(tl tally) {
	s.t.Helper()
	if tl.missing > 0 || tl.misrouted > 0 || tl.unknown > 0 {
		s.t.Errorf("%d events: %d missing, %d misrouted, %d records with unknown ids (read back %d)",
			len(s.events), tl.missing, tl.misrouted, tl.unknown, tl.records)
	}
}

// verifyExactlyOnce reads the outputs read_committed, checks them against
// the oracle, and also reads them read_uncommitted to count the aborted
// records a read_committed reader never sees.
func (s *scenario) verifyExactlyOnce() (tally, int) {
	s.t.Helper()
	tl := s.tally(s.readBack(true, 2*time.Minute))
	s.requireExactlyOnce(tl)
	aborted := len(s.readBack(false, 2*time.Minute)) - tl.records
	return tl, aborted
}

// report prints the scenario's result line to the test log and stdout.
func (s *scenario) report(tl tally, extra ...string) {
	s.t.Helper()
	line := fmt.Sprintf("scenario=%s records=%d kills=%d restarts=%d duplicates=%d missing=%d elapsed=%s",
		s.name, len(s.events), s.kills, s.restarts, tl.dups, tl.missing, time.Since(s.started).Round(100*time.Millisecond))
	if len(extra) > 0 {
		line += " " + strings.Join(extra, " ")
	}
	s.t.Log(line)
	fmt.Println(line)
}

// ---------------------------------------------------------------- kcat

// kcatIDs reads topic with kcat, read_committed, and counts each id.
func (s *scenario) kcatIDs(topic string) map[string]int {
	s.t.Helper()
	out := s.kcat(topic, "%k\t%s\n")
	ids := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte{'\t'})
		if !ok {
			s.t.Fatalf("kcat on %s: line without a tab: %q", topic, sc.Bytes())
		}
		ids[gen.IDOf(k, v)]++
	}
	if err := sc.Err(); err != nil {
		s.t.Fatal(err)
	}
	return ids
}

// kcat is what kcat prints of topic, read from the beginning to its end,
// read_committed, each record in format (kcat's -f).
func (s *scenario) kcat(topic, format string) []byte {
	s.t.Helper()
	bin, err := exec.LookPath("kcat")
	if err != nil {
		s.t.Fatalf("kcat not found (run scripts/install-deps.sh): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-b", strings.Join(s.brokers, ","), "-C", "-t", topic,
		"-o", "beginning", "-e", "-q", "-X", "isolation.level=read_committed", "-f", format)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("kcat on %s: %v: %s", topic, err, stderr.String())
	}
	return out
}

// connect opens the scenario's client and admin (closed at cleanup, with
// the scenario's topics) and creates its 6-partition input topic.
func (s *scenario) connect() {
	t := s.t
	t.Helper()
	var err error
	if s.cl, err = kgo.NewClient(kgo.SeedBrokers(s.brokers...)); err != nil {
		t.Fatal(err)
	}
	s.adm = kadm.NewClient(s.cl)
	t.Cleanup(s.cl.Close)
	t.Cleanup(s.cleanup)
	// A loaded broker creating many partitions at once can take tens of
	// seconds per request.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resp, err := s.adm.CreateTopic(ctx, inputPartitions, 1, nil, s.input)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create input topic %s on %s: %v", s.input, strings.Join(s.brokers, ","), err)
	}
	// CreateTopics returns once the controller has the topic; a broker's
	// metadata may lag a moment behind, and a router started in that
	// moment rightly refuses a missing input topic.
	waitFor(t, time.Minute, "input topic "+s.input+" in the brokers' metadata", func() (bool, string) {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		td, err := s.adm.ListTopics(c, s.input)
		if err != nil {
			return false, err.Error()
		}
		d, ok := td[s.input]
		switch {
		case !ok:
			return false, "not listed"
		case d.Err != nil:
			return false, d.Err.Error()
		}
		led := 0
		for _, pd := range d.Partitions {
			if pd.Err == nil && pd.Leader >= 0 {
				led++
			}
		}
		return len(d.Partitions) == inputPartitions && led == inputPartitions,
			fmt.Sprintf("%d partitions, %d with a leader", len(d.Partitions), led)
	})
}
