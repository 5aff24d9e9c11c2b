package processor

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sidestream/sidestream/metrics"
	"github.com/sidestream/sidestream/topology"
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

// status is the shared, lock-protected view of a running processor for
// the HTTP API. The poll loop writes it; handlers read copies.
type status struct {
	mu sync.Mutex
	// ready is published by itself (readiness.go), never by hand.
	ready *readiness
	// joined is false from a lost group session (heartbeat failed: broker
	// unreachable, session expired) until the next successful join.
	joined     bool
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

func newStatus(t *topology.Topology, ready gauge) *status {
	s := &status{tasks: map[tp]*TaskStatus{}, lost: map[tp]string{}, gapStop: map[tp]string{}, gapHist: map[tp]*TaskStatus{},
		direct: map[tp]*TaskStatus{}, directRoutes: map[string]string{}, inputs: t.InputTopics()}
	s.ready = newReadiness(ready, &s.mu)
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
func (s *status) directTopic() string { return strings.Join(s.inputs, "+") }

func (s *status) setJoined(ok bool) {
	s.mu.Lock()
	s.joined = ok
	s.mu.Unlock()
}

func (s *status) isJoined() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.joined
}

func (s *status) loop() {
	s.mu.Lock()
	s.lastLoop = time.Now()
	s.mu.Unlock()
}

func (s *status) assign(topic string, parts []int32) {
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
}

// directHeld reports whether some input topic's partition p is still
// assigned here (the direct window tasks of p live while one is).
func (s *status) directHeld(p int32) bool {
	for _, in := range s.inputs {
		if s.tasks[tp{in, p}] != nil {
			return true
		}
	}
	return false
}

func (s *status) revoke(topic string, parts []int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range parts {
		delete(s.tasks, tp{topic, p})
		if slices.Contains(s.inputs, topic) && !s.directHeld(p) {
			for rep := range s.directRoutes {
				delete(s.direct, tp{rep, p})
			}
		}
	}
}

// assignedCount is the number of assigned partitions (direct window tasks
// are not partitions of their own).
func (s *status) assignedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tasks)
}

// task is the status of a partition or of a direct window task.
// The caller holds s.mu.
func (s *status) task(topic string, p int32) *TaskStatus {
	if t := s.tasks[tp{topic, p}]; t != nil {
		return t
	}
	return s.direct[tp{topic, p}]
}

func (s *status) progress(topic string, p int32, next, hwm int64) (lag int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tasks[tp{topic, p}]
	if t == nil {
		t = &TaskStatus{Topic: topic, Partition: p, Committed: -1}
		s.tasks[tp{topic, p}] = t
	}
	t.Position, t.HighWatermark, t.active = next, hwm, time.Now()
	t.Lag = max(hwm-next, 0)
	return t.Lag
}

// quiet lists the input partitions assigned here that have made no
// progress for at least d (none since their assignment, or none lately).
func (s *status) quiet(now time.Time, d time.Duration) map[string][]int32 {
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

func (s *status) committed(offsets map[string]map[int32]int64, at time.Time) {
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

// Ready reports whether the processor has joined its group with a working
// producer, and why not when it has not. Warnings (conditions that do not
// stop processing) follow the reason.
func (p *Processor) Ready() (bool, string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	ok, reason := p.st.ready.ok, p.st.ready.reason
	if len(p.st.warnings) > 0 {
		return ok, reason + "; warning: " + strings.Join(p.st.warnings, "; warning: ")
	}
	return ok, reason
}

func (s *status) warn(w string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.warnings, w) {
		s.warnings = append(s.warnings, w)
	}
}

// gap records a gap of a consumed partition: skipped (committed past it)
// or stopping the task.
func (s *status) gap(g metrics.Gap, skipped bool) {
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

func (s *status) setGapStop(g metrics.Gap, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gapStop[tp{g.Topic, g.Partition}] = why
	s.ready.setLocked(false, why)
}

// clearGapStop reports whether the partition was stopped by a gap, and
// forgets it.
func (s *status) clearGapStop(topic string, p int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.gapStop[tp{topic, p}]; !ok {
		return false
	}
	delete(s.gapStop, tp{topic, p})
	return true
}

// Healthy reports whether the poll loop is making progress: it has turned
// within the stall limit (or has not started yet and is still within it).
func (p *Processor) Healthy() (bool, string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	last := p.st.lastLoop
	if last.IsZero() {
		last = p.started
	}
	if since := time.Since(last); since > p.opts.stallAfter {
		return false, "poll loop has not turned for " + since.Round(time.Second).String()
	}
	return true, "ok"
}

// Tasks lists the assigned partitions, sorted.
func (p *Processor) Tasks() []TaskStatus {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	out := make([]TaskStatus, 0, len(p.st.tasks)+len(p.st.direct))
	for _, t := range p.st.tasks {
		out = append(out, *t)
	}
	for _, t := range p.st.direct {
		d := *t
		if len(p.st.inputs) == 1 {
			// One input: the task is at that partition's position.
			if in := p.st.tasks[tp{p.st.inputs[0], t.Partition}]; in != nil {
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

func (s *status) lastCommitAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastCommit
}

func (s *status) heldBy(topic string, p int32, src string, at *int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.task(topic, p); t != nil {
		t.HeldBy, t.HeldAt = src, at
	}
}

func (s *status) window(topic string, p int32, route string, wm *int64, open, entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.task(topic, p)
	if t == nil {
		return
	}
	t.Route, t.Watermark, t.OpenWindows, t.StoreEntries, t.StoreBytes = route, wm, open, entries, bytes
}

func (s *status) assembly(topic string, p int32, route string, clock *int64, open, entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.task(topic, p)
	if t == nil {
		return
	}
	t.Route, t.AssemblyClock, t.OpenAssemblies, t.StoreEntries, t.StoreBytes = route, clock, open, entries, bytes
}

func (s *status) localCheckpoint(topic string, p int32, off *int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.task(topic, p); t != nil {
		t.LocalCheckpoint = off
	}
}

// assigned reports whether this instance holds the partition now.
func (s *status) assigned(topic string, p int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[tp{topic, p}] != nil
}

func (s *status) setLost(topic string, p int32, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost[tp{topic, p}] = why
	s.ready.setLocked(false, why)
}

func (s *status) clearLost(topic string, p int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lost, tp{topic, p})
}

// lostReason is why an assigned partition's changelog lost state, or "".
// A partition assigned elsewhere now is not this instance's concern.
func (s *status) lostReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostReasonLocked()
}

func (s *status) lostReasonLocked() string {
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

// readyAfterCommit publishes readiness after a successful commit: ready
// once the group is joined (member: the client has a generation) and no
// assigned partition is stopped. The check and the publication are one
// step under the status lock, so a stop recorded meanwhile is never
// overwritten by "ok".
func (s *status) readyAfterCommit(member bool, group string) {
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
