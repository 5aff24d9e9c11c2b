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
	// RouteHeld says why the partition's route is held (a breaking
	// change: its state was written with another spec): it is not
	// consumed, its offset stays where the route stopped.
	RouteHeld string `json:"route_held,omitempty"`

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
	// paused is why an objective paused the inputs (on_breach: pause),
	// "" when they are not: the router is not ready meanwhile.
	paused string
	// held are the held routes by name (held.go) and routeHeld their
	// gauge, sidestream_route_held.
	held      map[string]heldRoute
	routeHeld *prometheus.GaugeVec
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
		assignedGauge: m.Assigned, lagGauge: m.ConsumerLag, held: map[string]heldRoute{}, routeHeld: m.RouteHeld}
	s.ready = newReadiness(m.Ready, &s.mu)
	for _, r := range append(t.Windows(), t.Assemblies()...) {
		m.RouteHeld.WithLabelValues(r.Name).Set(0)
	}
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
func (o *Observer) directTopic() string { return strings.Join(o.inputs, "+") }

// SetJoined records whether the group session is joined (false from a
// lost session until the next successful join).
func (o *Observer) SetJoined(ok bool) {
	o.mu.Lock()
	o.joined = ok
	o.mu.Unlock()
}

// Joined reports whether the group session is joined.
func (o *Observer) Joined() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.joined
}

// Start records that the processor began to run (the poll loop's
// first turn is due within the stall limit from here).
func (o *Observer) Start() {
	o.mu.Lock()
	o.started = time.Now()
	o.mu.Unlock()
}

// Loop records a turn of the poll loop (what /healthz watches).
func (o *Observer) Loop() {
	o.mu.Lock()
	o.lastLoop = time.Now()
	o.mu.Unlock()
}

// Assign adds assigned partitions of topic (and, for an input topic, the
// direct tasks that live inside them); a partition that comes back shows
// its gap history again.
func (o *Observer) Assign(topic string, parts []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range parts {
		k := tp{topic, p}
		if o.tasks[k] == nil {
			o.tasks[k] = &TaskStatus{Topic: topic, Partition: p, Position: -1, Committed: -1, HighWatermark: -1, Lag: -1, active: time.Now()}
			if h := o.gapHist[k]; h != nil {
				o.tasks[k].Lost, o.tasks[k].Gaps = h.Lost, h.Gaps
			}
			o.tasks[k].RouteHeld = o.heldTopicLocked(topic)
		}
		if !slices.Contains(o.inputs, topic) {
			continue
		}
		for rep, route := range o.directRoutes {
			if k := (tp{rep, p}); o.direct[k] == nil {
				o.direct[k] = &TaskStatus{Topic: o.directTopic(), Partition: p, Route: route, Direct: true,
					Position: -1, Committed: -1, HighWatermark: -1, Lag: -1}
			}
		}
	}
	o.assignedGauge.Set(float64(len(o.tasks)))
}

// directHeld reports whether some input topic's partition p is still
// assigned here (the direct window tasks of p live while one is).
func (o *Observer) directHeld(p int32) bool {
	for _, in := range o.inputs {
		if o.tasks[tp{in, p}] != nil {
			return true
		}
	}
	return false
}

// Revoke removes revoked partitions of topic (and the direct tasks no
// input partition holds any more) with their lag series.
func (o *Observer) Revoke(topic string, parts []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	defer func() { o.assignedGauge.Set(float64(len(o.tasks))) }()
	for _, p := range parts {
		delete(o.tasks, tp{topic, p})
		o.lagGauge.DeleteLabelValues(topic, strconv.Itoa(int(p)))
		if slices.Contains(o.inputs, topic) && !o.directHeld(p) {
			for rep := range o.directRoutes {
				delete(o.direct, tp{rep, p})
			}
		}
	}
}

// assignedCount is the number of assigned partitions (direct window tasks
// are not partitions of their own).
func (o *Observer) assignedCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.tasks)
}

// task is the status of a partition or of a direct window task.
// The caller holds s.mu.
func (o *Observer) task(topic string, p int32) *TaskStatus {
	if t := o.tasks[tp{topic, p}]; t != nil {
		return t
	}
	return o.direct[tp{topic, p}]
}

// Progress records a processed batch of a partition and its lag: next is
// the next offset to process, hwm the high watermark.
func (o *Observer) Progress(topic string, p int32, next, hwm int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.tasks[tp{topic, p}]
	if t == nil {
		t = &TaskStatus{Topic: topic, Partition: p, Committed: -1}
		o.tasks[tp{topic, p}] = t
	}
	t.Position, t.HighWatermark, t.active = next, hwm, time.Now()
	t.Lag = max(hwm-next, 0)
	o.lagGauge.WithLabelValues(topic, strconv.Itoa(int(p))).Set(float64(t.Lag))
}

// Quiet lists the input partitions assigned here that have made no
// progress for at least d (none since their assignment, or none lately).
func (o *Observer) Quiet(now time.Time, d time.Duration) map[string][]int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var q map[string][]int32
	for k, t := range o.tasks {
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
func (o *Observer) Committed(offsets map[string]map[int32]int64, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lastCommit = at
	for topic, ps := range offsets {
		for p, off := range ps {
			if t := o.tasks[tp{topic, p}]; t != nil {
				t.Committed, t.LastCommit = off, at
			}
		}
	}
}

// Ready is what /readyz answers: whether the processor has joined its
// group with a working producer, and why not when it has not. Warnings
// (conditions that do not stop processing) follow the reason.
func (o *Observer) Ready() (bool, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ok, reason := o.ready.ok, o.ready.reason
	if len(o.warnings) > 0 {
		return ok, reason + "; warning: " + strings.Join(o.warnings, "; warning: ")
	}
	return ok, reason
}

// NotReady publishes not ready and why (on /readyz and the gauge
// together). Only ReadyAfterCommit publishes ready.
func (o *Observer) NotReady(why string) { o.ready.set(false, why) }

// Warn adds a warning to /readyz that does not make the router unready.
func (o *Observer) Warn(w string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !slices.Contains(o.warnings, w) {
		o.warnings = append(o.warnings, w)
	}
}

// Gap records a gap of a consumed partition: skipped (committed past it)
// or stopping the task.
func (o *Observer) Gap(g metrics.Gap, skipped bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := tp{g.Topic, g.Partition}
	h := o.gapHist[k]
	if h == nil {
		h = &TaskStatus{}
		o.gapHist[k] = h
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
	if t := o.tasks[k]; t != nil {
		t.Lost, t.Gaps = h.Lost, h.Gaps
	}
}

// SetGapStop records that a gap stopped its partition (on_gap: fail):
// not ready, and why, until ClearGapStop.
func (o *Observer) SetGapStop(g metrics.Gap, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gapStop[tp{g.Topic, g.Partition}] = why
	o.ready.setLocked(false, why)
}

// ClearGapStop reports whether the partition was stopped by a gap, and
// forgets it.
func (o *Observer) ClearGapStop(topic string, p int32) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.gapStop[tp{topic, p}]; !ok {
		return false
	}
	delete(o.gapStop, tp{topic, p})
	return true
}

// Healthy is what /healthz answers: whether the poll loop is making
// progress, having turned within stallAfter (or, not turned yet, having
// started within it).
func (o *Observer) Healthy(stallAfter time.Duration) (bool, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	last := o.lastLoop
	if last.IsZero() {
		last = o.started
	}
	if since := time.Since(last); since > stallAfter {
		return false, "poll loop has not turned for " + since.Round(time.Second).String()
	}
	return true, "ok"
}

// Tasks is what /tasks lists: the assigned partitions and direct tasks,
// sorted.
func (o *Observer) Tasks() []TaskStatus {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]TaskStatus, 0, len(o.tasks)+len(o.direct))
	for _, t := range o.tasks {
		out = append(out, *t)
	}
	for _, t := range o.direct {
		d := *t
		if len(o.inputs) == 1 {
			// One input: the task is at that partition'o position.
			if in := o.tasks[tp{o.inputs[0], t.Partition}]; in != nil {
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
func (o *Observer) LastCommit() time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lastCommit
}

// HeldBy records which input partition holds a task's aligned watermark
// back, and its largest event time (nil: not heard from yet).
func (o *Observer) HeldBy(topic string, p int32, src string, at *int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t := o.task(topic, p); t != nil {
		t.HeldBy, t.HeldAt = src, at
	}
}

// Window records a window task's watermark, open windows and store size.
func (o *Observer) Window(topic string, p int32, route string, wm *int64, open, entries int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.task(topic, p)
	if t == nil {
		return
	}
	t.Route, t.Watermark, t.OpenWindows, t.StoreEntries, t.StoreBytes = route, wm, open, entries, bytes
}

// Assembly records an assembly task's clock, open assemblies and store
// size.
func (o *Observer) Assembly(topic string, p int32, route string, clock *int64, open, entries int, bytes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.task(topic, p)
	if t == nil {
		return
	}
	t.Route, t.AssemblyClock, t.OpenAssemblies, t.StoreEntries, t.StoreBytes = route, clock, open, entries, bytes
}

// LocalCheckpoint records the changelog offset a task's on-disk store
// reflects.
func (o *Observer) LocalCheckpoint(topic string, p int32, off *int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if t := o.task(topic, p); t != nil {
		t.LocalCheckpoint = off
	}
}

// Assigned reports whether this instance holds the partition now.
func (o *Observer) Assigned(topic string, p int32) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tasks[tp{topic, p}] != nil
}

// SetLost records that a partition's changelog lost state: not ready,
// and why, while it is assigned here (until ClearLost).
func (o *Observer) SetLost(topic string, p int32, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lost[tp{topic, p}] = why
	o.ready.setLocked(false, why)
}

// LostPartitions lists, sorted, the partitions of topic whose changelog
// lost state (SetLost without ClearLost), assigned here now or not.
func (o *Observer) LostPartitions(topic string) []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int32
	for k := range o.lost {
		if k.topic == topic {
			out = append(out, k.partition)
		}
	}
	slices.Sort(out)
	return out
}

// ClearLost forgets a partition's changelog loss (its task restored).
func (o *Observer) ClearLost(topic string, p int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.lost, tp{topic, p})
}

// lostReason is why an assigned partition's changelog lost state, or "".
// A partition assigned elsewhere now is not this instance's concern.
func (o *Observer) lostReason() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lostReasonLocked()
}

func (o *Observer) lostReasonLocked() string {
	for k, why := range o.lost {
		if o.task(k.topic, k.partition) != nil {
			return why
		}
	}
	for k, why := range o.gapStop {
		if o.task(k.topic, k.partition) != nil {
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
func (o *Observer) ReadyAfterCommit(member bool, group string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !member || !o.joined {
		o.ready.setLocked(false, "joining consumer group "+group)
		return
	}
	if why := o.lostReasonLocked(); why != "" {
		o.ready.setLocked(false, why)
		return
	}
	if why := o.heldReasonLocked(); why != "" {
		o.ready.setLocked(false, why)
		return
	}
	if o.paused != "" {
		o.ready.setLocked(false, o.paused)
		return
	}
	o.ready.setLocked(true, "ok")
}

// SetPaused publishes that an objective paused the inputs and why (not
// ready at once), or, with "", that they resumed: ready again from the
// next commit (ReadyAfterCommit).
func (o *Observer) SetPaused(why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paused = why
	if why != "" {
		o.ready.setLocked(false, why)
	}
}
