// Package observe is the one observer of a running processor: the state
// behind /readyz, /healthz and /tasks, and the sidestream_ready gauge,
// kept under one lock. Readiness has one publisher (readiness.go), so
// /readyz and sidestream_ready cannot disagree, and a stop shown on
// /tasks (a changelog loss, an input gap) is never published together
// with "ready". series.go lists every counter series a topology can
// produce, preset at 0.
//
// The processor writes the observer as it runs; the HTTP API reads
// copies. It imports nothing of the runtime (a depguard rule in
// .golangci.yml): it knows partitions by topic and number, not tasks.
package observe

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sidestream/sidestream/internal/metrics"
	"github.com/sidestream/sidestream/internal/plan"
)

// TaskStatus is one assigned input partition as /tasks shows it.
type TaskStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Position is the next offset to process.
	Position int64 `json:"position"`
	// Committed is the next offset the last commit covered (-1: none yet).
	Committed     int64     `json:"committed"`
	HighWatermark int64     `json:"high_watermark"`
	Lag           int64     `json:"lag"`
	LastCommit    time.Time `json:"last_commit,omitzero"`
	// Window tasks (partitions of a repartition topic) only.
	Route        string `json:"route,omitempty"`
	Watermark    *int64 `json:"watermark,omitempty"` // epoch ms
	OpenWindows  int    `json:"open_windows,omitempty"`
	StoreEntries int    `json:"store_entries,omitempty"`
	StoreBytes   int64  `json:"store_bytes,omitempty"`
	// HeldBy (aligned watermarks) is the input partition with the least
	// progress, which the task's watermark waits for, and HeldAt its
	// largest event time (absent: not heard from yet).
	HeldBy string `json:"held_by,omitempty"`
	HeldAt *int64 `json:"held_at,omitempty"`
	// Direct marks the window or assembly task of a route without a
	// repartition topic (repartition: false): it runs inside the input
	// partition of the same number, whose position it shares.
	Direct bool `json:"direct,omitempty"`

	// active is when the task was assigned or last made progress.
	active time.Time
	// Assembly tasks only: open assemblies and the TTL's clock (epoch ms).
	OpenAssemblies int    `json:"open_assemblies,omitempty"`
	AssemblyClock  *int64 `json:"assembly_clock,omitempty"`
	// LocalCheckpoint is the changelog offset an on-disk store's durable
	// state reflects (a restart restores from there); absent for memory.
	LocalCheckpoint *int64 `json:"local_checkpoint,omitempty"`
	// Lost is the offsets of this partition the broker deleted before
	// they were read and the router skipped (on_gap: skip), since this
	// process was assigned it; Gaps the last few ranges, skipped or (with
	// on_gap: fail) stopping the task.
	Lost int64      `json:"lost,omitempty"`
	Gaps []GapRange `json:"gaps,omitempty"`
}

// GapRange is a range of offsets deleted before they were read.
type GapRange struct {
	From    int64 `json:"from"`
	To      int64 `json:"to"` // exclusive
	Offsets int64 `json:"offsets"`
	// Skipped: counted and passed (on_gap: skip); false: the task stopped
	// before it (on_gap: fail).
	Skipped bool `json:"skipped"`
}

// maxGaps bounds the gap ranges /tasks keeps per partition.
const maxGaps = 8

// Observer is the shared, lock-protected view of a running processor for
// the HTTP API. The poll loop writes it; handlers read copies.
type Observer struct {
	mu sync.Mutex
	// ready is published by itself (readiness.go), never by hand.
	ready *readiness
	// The gauges of what /tasks shows, set with it under mu:
	// sidestream_assigned_partitions and sidestream_consumer_lag_records.
	assignedGauge Gauge
	lagGauge      *prometheus.GaugeVec
	// joined is false from a lost group session (heartbeat failed: broker
	// unreachable, session expired) until the next successful join.
	joined     bool
	started    time.Time // Start: Run began
	lastLoop   time.Time
	lastCommit time.Time
	tasks      map[tp]*TaskStatus
	// direct holds the window tasks of routes without a repartition
	// topic, keyed by the route's (virtual) repartition topic name; they
	// come and go with the input partitions of the same number.
	direct map[tp]*TaskStatus
	// directRoutes maps those virtual names to their routes; inputs are
	// the input topics.
	directRoutes map[string]string
	inputs       []string
	// lost holds, per repartition partition, why its changelog lost
	// state: the router is not ready while one of them is assigned.
	lost map[tp]string
	// gapStop holds, per consumed partition, why a gap stopped it
	// (on_gap: fail), until a later batch of it is processed.
	gapStop map[tp]string
	// warnings are conditions reported on /readyz that do not make the
	// router unready (an existing repartition topic with time retention).
	warnings []string
	// gaps keeps the gap history of partitions across revokes, so /tasks
	// shows it again when the partition comes back.
	gapHist map[tp]*TaskStatus
}

type tp struct {
	topic     string
	partition int32
}

// New is the observer of a processor running t. Of m it writes, and is
// the only writer of, sidestream_ready (0 here), the assigned partitions
// and the consumer lag gauges.
func New(t *plan.Plan, m *metrics.Metrics) *Observer {
	s := &Observer{tasks: map[tp]*TaskStatus{}, lost: map[tp]string{}, gapStop: map[tp]string{}, gapHist: map[tp]*TaskStatus{},
		direct: map[tp]*TaskStatus{}, directRoutes: map[string]string{}, inputs: t.InputTopics(),
		assignedGauge: m.Assigned, lagGauge: m.ConsumerLag}
	s.ready = newReadiness(m.Ready, &s.mu)
	for _, r := range t.Windows() {
		if r.Window.Direct {
			s.directRoutes[r.Window.RepartitionTopic] = r.Name
		}
	}
	for _, r := range t.Assemblies() {
		if r.Assembly.Direct {
			s.directRoutes[r.Assembly.RepartitionTopic] = r.Name
		}
	}
	return s
}

// directTopic is how a direct window task names its input in /tasks.
func (s *Observer) directTopic() string { return strings.Join(s.inputs, "+") }

// SetJoined records whether the group session is joined (false from a
// lost session until the next successful join).
func (s *Observer) SetJoined(ok bool) {
	s.mu.Lock()
	s.joined = ok
	s.mu.Unlock()
}

// Joined reports whether the group session is joined.
func (s *Observer) Joined() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joined
}

// Start records that the processor began to run (the poll loop's
// first turn is due within the stall limit from here).
func (s *Observer) Start() {
	s.mu.Lock()
	s.started = time.Now()
	s.mu.Unlock()
}

// Loop records a turn of the poll loop (what /healthz watches).
func (s *Observer) Loop() {
	s.mu.Lock()
	s.lastLoop = time.Now()
	s.mu.Unlock()
}

// Assign adds assigned partitions of topic (and, for an input topic, the
// direct tasks that live inside them); a partition that comes back shows
// its gap history again.
func (s *Observer) Assign(topic string, parts []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		k := tp{topic, p}
		if s.tasks[k] == nil {
			s.tasks[k] = &TaskStatus{Topic: topic, Partition: p, Position: -1, Committed: -1, HighWatermark: -1, Lag: -1, active: time.Now()}
			if h := s.gapHist[k]; h != nil {
				s.tasks[k].Lost, s.tasks[k].Gaps = h.Lost, h.Gaps
			}
		}
		if !slices.Contains(s.inputs, topic) {
			continue
		}
		for rep, route := range s.directRoutes {
			if k := (tp{rep, p}); s.direct[k] == nil {
				s.direct[k] = &TaskStatus{Topic: s.directTopic(), Partition: p, Route: route, Direct: true,
					Position: -1, Committed: -1, HighWatermark: -1, Lag: -1}
			}
		}
	}
	s.assignedGauge.Set(float64(len(s.tasks)))
}

// directHeld reports whether some input topic's partition p is still
// assigned here (the direct window tasks of p live while one is).
func (s *Observer) directHeld(p int32) bool {
	for _, in := range s.inputs {
		if s.tasks[tp{in, p}] != nil {
			return true
		}
	}
	return false
}

// Revoke removes revoked partitions of topic (and the direct tasks no
// input partition holds any more) with their lag series.
func (s *Observer) Revoke(topic string, parts []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.assignedGauge.Set(float64(len(s.tasks))) }()
	for _, p := range parts {
		delete(s.tasks, tp{topic, p})
		s.lagGauge.DeleteLabelValues(topic, strconv.Itoa(int(p)))
		if slices.Contains(s.inputs, topic) && !s.directHeld(p) {
			for rep := range s.directRoutes {
				delete(s.direct, tp{rep, p})
			}
		}
	}
}

// assignedCount is the number of assigned partitions (direct window tasks
// are not partitions of their own).
func (s *Observer) assignedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tasks)
}

// task is the status of a partition or of a direct window task.
// The caller holds s.mu.
func (s *Observer) task(topic string, p int32) *TaskStatus {
	if t := s.tasks[tp{topic, p}]; t != nil {
		return t
	}
	return s.direct[tp{topic, p}]
}

// Progress records a processed batch of a partition and its lag: next is
// the next offset to process, hwm the high watermark.
func (s *Observer) Progress(topic string, p int32, next, hwm int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tasks[tp{topic, p}]
	if t == nil {
		t = &TaskStatus{Topic: topic, Partition: p, Committed: -1}
		s.tasks[tp{topic, p}] = t
	}
	t.Position, t.HighWatermark, t.active = next, hwm, time.Now()
	t.Lag = max(hwm-next, 0)
	s.lagGauge.WithLabelValues(topic, strconv.Itoa(int(p))).Set(float64(t.Lag))
}

// Quiet lists the input partitions assigned here that have made no
// progress for at least d (none since their assignment, or none lately).
func (s *Observer) Quiet(now time.Time, d time.Duration) map[string][]int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var q map[string][]int32
	for k, t := range s.tasks {
		if now.Sub(t.active) >= d {
			if q == nil {
				q = map[string][]int32{}
			}
			q[k.topic] = append(q[k.topic], k.partition)
		}
	}
	return q
}

// Committed records a commit at at of the next offsets per partition.
func (s *Observer) Committed(offsets map[string]map[int32]int64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastCommit = at
	for topic, ps := range offsets {
		for p, o := range ps {
			if t := s.tasks[tp{topic, p}]; t != nil {
				t.Committed, t.LastCommit = o, at
			}
		}
	}
}

// Ready is what /readyz answers: whether the processor has joined its
// group with a working producer, and why not when it has not. Warnings
// (conditions that do not stop processing) follow the reason.
func (s *Observer) Ready() (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, reason := s.ready.ok, s.ready.reason
	if len(s.warnings) > 0 {
		return ok, reason + "; warning: " + strings.Join(s.warnings, "; warning: ")
	}
	return ok, reason
}

// NotReady publishes not ready and why (on /readyz and the gauge
// together). Only ReadyAfterCommit publishes ready.
func (s *Observer) NotReady(why string) { s.ready.set(false, why) }

// Warn adds a warning to /readyz that does not make the router unready.
func (s *Observer) Warn(w string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.warnings, w) {
		s.warnings = append(s.warnings, w)
	}
}

// Gap records a gap of a consumed partition: skipped (committed past it)
// or stopping the task.
func (s *Observer) Gap(g metrics.Gap, skipped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tp{g.Topic, g.Partition}
	h := s.gapHist[k]
	if h == nil {
		h = &TaskStatus{}
		s.gapHist[k] = h
	}
	r := GapRange{From: g.From, To: g.To, Offsets: g.Offsets(), Skipped: skipped}
	if n := len(h.Gaps); n > 0 && h.Gaps[n-1] == r {
		return // the same stop seen again at a recheck
	}
	if skipped {
		h.Lost += g.Offsets()
	}
	h.Gaps = append(h.Gaps, r)
	if len(h.Gaps) > maxGaps {
		h.Gaps = slices.Clone(h.Gaps[len(h.Gaps)-maxGaps:])
	}
	if t := s.tasks[k]; t != nil {
		t.Lost, t.Gaps = h.Lost, h.Gaps
	}
}

// SetGapStop records that a gap stopped its partition (on_gap: fail):
// not ready, and why, until ClearGapStop.
func (s *Observer) SetGapStop(g metrics.Gap, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gapStop[tp{g.Topic, g.Partition}] = why
	s.ready.setLocked(false, why)
}

// ClearGapStop reports whether the partition was stopped by a gap, and
// forgets it.
func (s *Observer) ClearGapStop(topic string, p int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.gapStop[tp{topic, p}]; !ok {
		return false
	}
	delete(s.gapStop, tp{topic, p})
	return true
}

// Healthy is what /healthz answers: whether the poll loop is making
// progress, having turned within stallAfter (or, not turned yet, having
// started within it).
func (s *Observer) Healthy(stallAfter time.Duration) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.lastLoop
	if last.IsZero() {
		last = s.started
	}
	if since := time.Since(last); since > stallAfter {
		return false, "poll loop has not turned for " + since.Round(time.Second).String()
	}
	return true, "ok"
}

// Tasks is what /tasks lists: the assigned partitions and direct tasks,
// sorted.
func (s *Observer) Tasks() []TaskStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TaskStatus, 0, len(s.tasks)+len(s.direct))
	for _, t := range s.tasks {
		out = append(out, *t)
	}
	for _, t := range s.direct {
		d := *t
		if len(s.inputs) == 1 {
			// One input: the task is at that partition's position.
			if in := s.tasks[tp{s.inputs[0], t.Partition}]; in != nil {
				d.Position, d.Committed, d.HighWatermark, d.Lag, d.LastCommit = in.Position, in.Committed, in.HighWatermark, in.Lag, in.LastCommit
			}
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Route < out[j].Route
	})
	return out
}

// LastCommit is when the last commit succeeded.
func (s *Observer) LastCommit() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastCommit
}

// HeldBy records which input partition holds a task's aligned watermark
// back, and its largest event time (nil: not heard from yet).
func (s *Observer) HeldBy(topic string, p int32, src string, at *int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.task(topic, p); t != nil {
		t.HeldBy, t.HeldAt = src, at
	}
}

// Window records a window task's watermark, open windows and store size.
func (s *Observer) Window(topic string, p int32, route string, wm *int64, open, entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.task(topic, p)
	if t == nil {
		return
	}
	t.Route, t.Watermark, t.OpenWindows, t.StoreEntries, t.StoreBytes = route, wm, open, entries, bytes
}

// Assembly records an assembly task's clock, open assemblies and store
// size.
func (s *Observer) Assembly(topic string, p int32, route string, clock *int64, open, entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.task(topic, p)
	if t == nil {
		return
	}
	t.Route, t.AssemblyClock, t.OpenAssemblies, t.StoreEntries, t.StoreBytes = route, clock, open, entries, bytes
}

// LocalCheckpoint records the changelog offset a task's on-disk store
// reflects.
func (s *Observer) LocalCheckpoint(topic string, p int32, off *int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.task(topic, p); t != nil {
		t.LocalCheckpoint = off
	}
}

// Assigned reports whether this instance holds the partition now.
func (s *Observer) Assigned(topic string, p int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[tp{topic, p}] != nil
}

// SetLost records that a partition's changelog lost state: not ready,
// and why, while it is assigned here (until ClearLost).
func (s *Observer) SetLost(topic string, p int32, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[tp{topic, p}] = why
	s.ready.setLocked(false, why)
}

// LostPartitions lists, sorted, the partitions of topic whose changelog
// lost state (SetLost without ClearLost), assigned here now or not.
func (s *Observer) LostPartitions(topic string) []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int32
	for k := range s.lost {
		if k.topic == topic {
			out = append(out, k.partition)
		}
	}
	slices.Sort(out)
	return out
}

// ClearLost forgets a partition's changelog loss (its task restored).
func (s *Observer) ClearLost(topic string, p int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lost, tp{topic, p})
}

// lostReason is why an assigned partition's changelog lost state, or "".
// A partition assigned elsewhere now is not this instance's concern.
func (s *Observer) lostReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostReasonLocked()
}

func (s *Observer) lostReasonLocked() string {
	for k, why := range s.lost {
		if s.task(k.topic, k.partition) != nil {
			return why
		}
	}
	for k, why := range s.gapStop {
		if s.task(k.topic, k.partition) != nil {
			return why
		}
	}
	return ""
}

// ReadyAfterCommit publishes readiness after a successful commit: ready
// once the group is joined (member: the client has a generation) and no
// assigned partition is stopped. The check and the publication are one
// step under the observer's lock, so a stop recorded meanwhile is never
// overwritten by "ok".
func (s *Observer) ReadyAfterCommit(member bool, group string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !member || !s.joined {
		s.ready.setLocked(false, "joining consumer group "+group)
		return
	}
	if why := s.lostReasonLocked(); why != "" {
		s.ready.setLocked(false, why)
		return
	}
	s.ready.setLocked(true, "ok")
}
