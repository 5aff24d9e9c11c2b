// Package metrics owns every Prometheus metric sidestream exposes: each
// name is declared here and nowhere else, so docs/reference/metrics.md and
// the code cannot drift apart (TestReferenceNamesEveryMetric).
//
// It must never import another sidestream package; callers hand it plain
// values. Labels are bounded (topic, route, stage, reason, partition),
// never record keys or IDs.
package metrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/plugin/kprom"
)

// Namespace prefixes every metric name.
const Namespace = "sidestream"

// Metric names, in one place. The conservation invariant reads:
//
//	sum(consumed) + sum(repartition consumed) = routed + sum(dirty) + sum(dropped)
//	    + aggregated + late + assembly parts + overflowed
//
// All record counters count only committed work: under exactly-once a
// transaction's counts are added when it commits, so an aborted and
// replayed batch is never counted twice.
const (
	// NameConsumed counts input records only; a repartition topic's
	// records are NameRepartitionConsumed.
	NameConsumed = "sidestream_records_consumed_total"
	// NameRepartitionConsumed counts the records stage two read from
	// window and assembly repartition topics (marks aside).
	NameRepartitionConsumed = "sidestream_repartition_records_consumed_total"
	NameRouted              = "sidestream_records_routed_total"
	// NameRouteIn counts the records each route took at stage one: a
	// plain route's outputs, a window route's records, an assembly
	// route's parts (a fan-out record counts once per route).
	NameRouteIn = "sidestream_route_records_in_total"
	// NameRouteWritten counts the records the router wrote to each
	// topic, by the route that owns the topic (its own topic and its
	// side topics; "dirty" for the dirty topic): counted per record
	// acknowledged by the broker, added once the interval commits.
	NameRouteWritten = "sidestream_route_records_written_total"
	// NameRouteRecords is NameRouteIn under its old name, deprecated in
	// 0.1.0 and removed in 0.2.0: it was documented as records written,
	// which it never was for window and assembly routes.
	NameRouteRecords    = "sidestream_route_records_total"
	NameDirty           = "sidestream_records_dirty_total"
	NameDropped         = "sidestream_records_dropped_total"
	NameDirtyTruncated  = "sidestream_dirty_truncated_total"
	NameBatchDuration   = "sidestream_batch_processing_duration_seconds"
	NameCommitDuration  = "sidestream_commit_duration_seconds"
	NameCommits         = "sidestream_commits_total"
	NameAborts          = "sidestream_txn_aborts_total"
	NameConsumerLag     = "sidestream_consumer_lag_records"
	NameAggregated      = "sidestream_records_aggregated_total"
	NameLate            = "sidestream_records_late_total"
	NameWindowResults   = "sidestream_window_results_total"
	NameWatermark       = "sidestream_watermark_milliseconds"
	NameWatermarkLag    = "sidestream_watermark_lag_seconds"
	NameOpenWindows     = "sidestream_open_windows"
	NameStoreEntries    = "sidestream_store_entries"
	NameStoreBytes      = "sidestream_store_bytes"
	NameChangelog       = "sidestream_changelog_records_total"
	NameRestoreDuration = "sidestream_restore_duration_seconds"
	NameRestored        = "sidestream_restored_records_total"
	NameReady           = "sidestream_ready"
	NameAssigned        = "sidestream_assigned_partitions"
	NameStrandedRepairs = "sidestream_stranded_offsets_repairs_total"
	NameClamped         = "sidestream_event_time_clamped_total"
	NameMarks           = "sidestream_watermark_marks_total"
	KafkaClientNamspace = "sidestream_kafka" // franz-go client metrics (kprom)
)

// Metric names of the redrive marks (router redrive).
const (
	NameRedriven = "sidestream_records_redriven_total"
)

// Assembly metric names. Every repartitioned part counts once in
// NameAssemblyParts, by outcome: new (the first copy of a part), duplicate
// (a part the open assembly already held; last_wins/first_wins decide
// which copy stays), completed (the ID completed within the retention: the
// part went to the duplicate route). The conservation invariant adds
// their sum.
const (
	NameAssemblyParts      = "sidestream_assembly_parts_total"
	NameAssemblies         = "sidestream_assemblies_total"
	NameAssembliesOpen     = "sidestream_assemblies_open"
	NameAssemblyPartsPer   = "sidestream_assembly_parts_per_assembly"
	NameAssemblyTimeToDone = "sidestream_assembly_time_to_complete_seconds"
)

// Assembly part outcomes and assembly results (label values).
const (
	PartNew         = "new"
	PartDuplicate   = "duplicate"
	PartCompleted   = "completed"
	ResultCompleted = "completed"
	ResultExpired   = "expired"
	ResultTooLarge  = "too_large"
)

// AssemblyObs is one emitted assembly, for the histograms.
type AssemblyObs struct {
	Route    string
	Parts    int
	Complete bool
	Seconds  float64 // first part to completion, on the TTL's clock
}

// assemblyMetrics are the collectors of the assembly stage.
type assemblyMetrics struct {
	AssemblyParts    *prometheus.CounterVec   // route, outcome
	Assemblies       *prometheus.CounterVec   // route, result
	AssembliesOpen   *prometheus.GaugeVec     // route, partition
	AssemblyPartsPer *prometheus.HistogramVec // route
	TimeToComplete   *prometheus.HistogramVec // route
}

func newAssemblyMetrics(r *prometheus.Registry) assemblyMetrics {
	a := assemblyMetrics{
		AssemblyParts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameAssemblyParts,
			Help: "Repartitioned parts handled by assembly routes, by outcome (new, duplicate: already held, completed: sent to the duplicate route)."}, []string{"route", "outcome"}),
		Assemblies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameAssemblies,
			Help: "Assemblies emitted, by result (completed, expired: written to the incomplete route, too_large: over max_record_bytes, written to the dirty route cut to fit)."}, []string{"route", "result"}),
		AssembliesOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameAssembliesOpen,
			Help: "Open assemblies (waiting for parts) per task."}, []string{"route", "partition"}),
		AssemblyPartsPer: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameAssemblyPartsPer,
			Help: "Parts held by each emitted assembly (complete or expired).", Buckets: prometheus.LinearBuckets(1, 1, 10)}, []string{"route"}),
		TimeToComplete: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameAssemblyTimeToDone,
			Help: "Time from an assembly's first part to its completion, on the TTL's clock, in seconds.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 12)}, []string{"route"}),
	}
	r.MustRegister(a.AssemblyParts, a.Assemblies, a.AssembliesOpen, a.AssemblyPartsPer, a.TimeToComplete)
	return a
}

func (m *Metrics) observeAssemblies(t *Tally) {
	for k, v := range t.AssemblyParts {
		m.AssemblyParts.WithLabelValues(k[0], k[1]).Add(float64(v))
	}
	for k, v := range t.Assemblies {
		m.Assemblies.WithLabelValues(k[0], k[1]).Add(float64(v))
	}
	for _, o := range t.AssemblyObs {
		m.AssemblyPartsPer.WithLabelValues(o.Route).Observe(float64(o.Parts))
		if o.Complete {
			m.TimeToComplete.WithLabelValues(o.Route).Observe(o.Seconds)
		}
	}
}

// Local state stores (state.store: pebble).
const (
	NameStateWipes = "sidestream_state_wipes_total"
)

// Metrics holds the collectors of one router process.
type Metrics struct {
	Registry *prometheus.Registry

	Consumed       *prometheus.CounterVec // topic (inputs)
	Repartitioned  *prometheus.CounterVec // topic (repartition topics)
	Routed         prometheus.Counter
	RouteIn        *prometheus.CounterVec // route
	RouteWritten   *prometheus.CounterVec // route, topic
	RouteRecords   *prometheus.CounterVec // route (deprecated: RouteIn)
	Dirty          *prometheus.CounterVec // stage, reason
	Dropped        *prometheus.CounterVec // reason
	DirtyTruncated prometheus.Counter
	Clamped        prometheus.Counter
	Marks          *prometheus.CounterVec
	BatchDuration  prometheus.Histogram
	CommitDuration prometheus.Histogram
	Commits        prometheus.Counter
	Aborts         *prometheus.CounterVec // reason
	ConsumerLag    *prometheus.GaugeVec   // topic, partition
	Ready          prometheus.Gauge
	Assigned       prometheus.Gauge
	// StrandedRepairs counts re-ended transactions that released offsets
	// a lost transaction marker left pending, by outcome (commit, abort).
	StrandedRepairs *prometheus.CounterVec

	Aggregated      *prometheus.CounterVec // route
	Late            *prometheus.CounterVec // route
	WindowResults   *prometheus.CounterVec // route, kind
	Watermark       *prometheus.GaugeVec   // route, partition
	WatermarkLag    *prometheus.GaugeVec   // route, partition
	OpenWindows     *prometheus.GaugeVec   // route, partition
	StoreEntries    *prometheus.GaugeVec   // route, partition
	StoreBytes      *prometheus.GaugeVec   // route, partition
	Changelog       *prometheus.CounterVec // route
	RestoreDuration prometheus.Histogram
	RestoredRecords *prometheus.CounterVec // route
	// StateWipes counts local stores wiped before a full restore, by
	// route and reason (no_checkpoint, below_start, past_end,
	// older_than_delete_retention).
	StateWipes *prometheus.CounterVec

	// Registry counts the schema registry lookups of the registry-backed
	// inputs; pass it to registry.WithHooks.
	SchemaRegistry *RegistryMetrics
	// Tables are the lookup tables' collectors.
	Tables *TableMetrics

	// Redriven counts consumed input records that carry a redrive mark.
	Redriven *prometheus.CounterVec // topic
	assemblyMetrics
	// StateOverflow: state limit decisions, by route and policy.
	StateOverflow *prometheus.CounterVec
	faultMetrics
	buildMetrics
	// Objectives are the slo gauges (objective.go).
	Objectives *ObjectiveMetrics
	*computedMetrics
}

// New builds and registers every collector on a fresh registry, plus the
// Go runtime and process collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		Consumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameConsumed, Help: "Input records consumed and committed, by input topic (repartition topics apart).",
		}, []string{"topic"}),
		Repartitioned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameRepartitionConsumed, Help: "Records of window and assembly repartition topics consumed by stage two and committed, by topic (watermark marks apart).",
		}, []string{"topic"}),
		Routed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameRouted, Help: "Input records that went to at least one route (default route included).",
		}),
		RouteIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameRouteIn, Help: "Records each route took at stage one: a plain route's outputs, a window route's records, an assembly route's parts (a fan-out record counts once per route), committed.",
		}, []string{"route"}),
		RouteWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameRouteWritten, Help: "Records written to each output topic and acknowledged, by topic and the route that owns it (dirty: the dirty topic), counted once the interval commits (exactly-once: committed transactions only).",
		}, []string{"route", "topic"}),
		RouteRecords: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameRouteRecords, Help: "Deprecated in 0.1.0: use sidestream_route_records_in_total (the same count) or sidestream_route_records_written_total; removed in 0.2.0.",
		}, []string{"route"}),
		Dirty: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDirty, Help: "Input records sent to the dirty route, by stage and reason.",
		}, []string{"stage", "reason"}),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDropped, Help: "Input records dropped on purpose (routing.default: drop), by reason.",
		}, []string{"reason"}),
		DirtyTruncated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameDirtyTruncated, Help: "Records too large to write as-is, written to dirty with a truncated payload.",
		}),
		BatchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: NameBatchDuration, Help: "Time to decode and route one polled batch, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		CommitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: NameCommitDuration, Help: "Time to commit (flush, offsets, end transaction), in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		Marks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameMarks, Help: "Watermark marks (a source's progress, for aligned watermarks) written by stage one and read by window tasks, committed.",
		}, []string{"direction"}),
		Clamped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameClamped, Help: "Event times beyond event_time.max_ahead set to the bound (on_ahead: clamp).",
		}),
		Commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameCommits, Help: "Successful commits (transactions under exactly-once, offset commits under at-least-once).",
		}),
		Aborts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameAborts, Help: "Aborted transactions, by reason (rebalance, produce_error, authorization, commit_error, registry_unavailable, shutdown); under at-least-once, the intervals left uncommitted by a produce failure (produce_error, authorization) or given up for a registry outage (registry_unavailable).",
		}, []string{"reason"}),
		ConsumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameConsumerLag, Help: "Records between the last processed offset and the partition's high watermark.",
		}, []string{"topic", "partition"}),
		Ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: NameReady, Help: "1 when the router is ready (joined, producer initialised), else 0.",
		}),
		Assigned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: NameAssigned, Help: "Input partitions assigned to this process.",
		}),
	}
	m.StrandedRepairs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameStrandedRepairs,
		Help: "Transactions re-ended to release input offsets left pending by a lost transaction marker, by the outcome re-applied (commit, abort).",
	}, []string{"outcome"})
	m.registerStateMetrics(r)
	r.MustRegister(m.Consumed, m.Repartitioned, m.Routed, m.RouteIn, m.RouteWritten, m.RouteRecords, m.Dirty, m.Dropped, m.DirtyTruncated, m.Clamped, m.Marks,
		m.BatchDuration, m.CommitDuration, m.Commits, m.Aborts, m.ConsumerLag, m.Ready, m.Assigned, m.StrandedRepairs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Redriven = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameRedriven, Help: "Input records consumed and committed that carry a redrive mark (router redrive), by input topic; they are also counted in consumed."}, []string{"topic"})
	r.MustRegister(m.Redriven)
	m.SchemaRegistry = NewRegistryMetrics(r)
	m.Tables = NewTableMetrics(r)
	m.assemblyMetrics = newAssemblyMetrics(r)
	m.StateOverflow = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameStateOverflow,
		Help: "State limit decisions of window and assembly routes, by route and policy (route: records sent to the overflow route; evict: windows or assemblies evicted early)."}, []string{"route", "policy"})
	r.MustRegister(m.StateOverflow)
	m.registerFeatureMetrics(r)
	return m
}

// registerFeatureMetrics makes the metrics each feature declares in its
// own file: faults, build, objectives, computed topics.
func (m *Metrics) registerFeatureMetrics(r *prometheus.Registry) {
	m.faultMetrics = newFaultMetrics(r)
	m.buildMetrics = newBuildMetrics(r)
	m.Objectives = newObjectiveMetrics(r)
	m.computedMetrics = newComputedMetrics(r)
}

// registerStateMetrics makes the window and state-store series: results,
// late records, watermarks, store sizes, changelog and restore.
func (m *Metrics) registerStateMetrics(r *prometheus.Registry) {
	rp := []string{"route", "partition"}
	m.Aggregated = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameAggregated, Help: "Repartitioned records applied to at least one window, by window route."}, []string{"route"})
	m.Late = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameLate, Help: "Records whose every window was already purged, sent to the late route, by window route."}, []string{"route"})
	m.WindowResults = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameWindowResults, Help: "Window results written, by route and kind (first, update, final, retract)."}, []string{"route", "kind"})
	m.Watermark = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameWatermark, Help: "Deprecated in 0.1.0: use sidestream_watermark_timestamp_seconds; removed in 0.2.0. Watermark of each window task, epoch milliseconds."}, rp)
	m.WatermarkLag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameWatermarkLag, Help: "Wall clock minus the task's watermark, in seconds."}, rp)
	m.OpenWindows = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameOpenWindows, Help: "Open (not yet purged) windows per task."}, rp)
	m.StoreEntries = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameStoreEntries, Help: "Entries in each task's state store."}, rp)
	m.StoreBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameStoreBytes, Help: "Bytes of keys and values in each task's state store."}, rp)
	m.Changelog = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameChangelog, Help: "Changelog records (state changes and tombstones) committed, by window route."}, []string{"route"})
	m.RestoreDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: NameRestoreDuration, Help: "Time to restore one task's state from its changelog, in seconds.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)})
	m.RestoredRecords = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameRestored, Help: "Changelog records read while restoring state, by window route."}, []string{"route"})
	m.StateWipes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameStateWipes, Help: "Local state stores wiped and restored in full (checkpoint missing or outside the changelog), by window route and reason."}, []string{"route", "reason"})
	r.MustRegister(m.StateWipes)
	r.MustRegister(m.Aggregated, m.Late, m.WindowResults, m.Watermark, m.WatermarkLag, m.OpenWindows,
		m.StoreEntries, m.StoreBytes, m.Changelog, m.RestoreDuration, m.RestoredRecords)
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Tally is the counts of one commit: added to the counters only once the
// commit succeeds.
type Tally struct {
	Consumed map[string]int // input topic
	// Repartitioned counts stage two's records, by repartition topic.
	Repartitioned map[string]int
	Routed        int
	Routes        map[string]int // route: records in
	// Written counts the records acknowledged, by route and topic (the
	// loop adds them after its flush; see AddWritten).
	Written   map[[2]string]int
	Dirty     map[[2]string]int
	Dropped   map[string]int
	Truncated int
	Clamped   int // event times set to event_time.max_ahead's bound
	// Window stage, by route.
	Aggregated    map[string]int
	Late          map[string]int
	WindowResults map[[2]string]int // route, kind
	Changelog     map[string]int
	// Aligned watermarks: marks written by stage one, read by stage two.
	MarksWritten, MarksRead int
	// Redriven counts input records with a redrive mark, by topic.
	Redriven map[string]int
	// Assembly stage.
	AssemblyParts map[[2]string]int // route, outcome
	Assemblies    map[[2]string]int // route, result
	AssemblyObs   []AssemblyObs
	// StateOverflow counts state limit decisions, by route and policy
	// (nil until the first; see AddOverflow).
	StateOverflow map[[2]string]int
	// ComputedTopics counts the records of topic_from routes by route
	// and computed topic (nil until the first; see AddComputedTopic).
	ComputedTopics map[[2]string]int
	// Gaps are the offsets of consumed partitions the broker deleted
	// before they were read (nil until the first; see AddGap).
	Gaps []Gap
	// EventTimes are, by route, the records with an event time the
	// route took in and the newest of those event times, for the routes
	// with an event-time lag objective (nil until the first; see
	// AddEventTime).
	EventTimes map[string]RouteTimes
}

// RouteTimes are the records with an event time a route took in during
// an interval, and the newest event time among them (epoch ms).
type RouteTimes struct {
	N      int
	Newest int64
}

// AddEventTime counts one record of route with event time ms.
func (t *Tally) AddEventTime(route string, ms int64) {
	if t.EventTimes == nil {
		t.EventTimes = map[string]RouteTimes{}
	}
	rt, ok := t.EventTimes[route]
	if !ok || ms > rt.Newest {
		rt.Newest = ms
	}
	rt.N++
	t.EventTimes[route] = rt
}

// Gap is a range of offsets [From, To) of one partition that the broker
// deleted before the router read it (retention, DeleteRecords): those
// records were never consumed.
type Gap struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
}

// Offsets is the number of offsets the gap skipped: records, and any
// transaction markers or aborted records deleted with them.
func (g Gap) Offsets() int64 { return g.To - g.From }

// AddGap records a gap of a batch.
func (t *Tally) AddGap(g Gap) { t.Gaps = append(t.Gaps, g) }

// NewTally returns an empty tally.
func NewTally() *Tally {
	return &Tally{Consumed: map[string]int{}, Repartitioned: map[string]int{}, Written: map[[2]string]int{}, Routes: map[string]int{}, Dirty: map[[2]string]int{}, Dropped: map[string]int{},
		Aggregated: map[string]int{}, Late: map[string]int{}, WindowResults: map[[2]string]int{}, Changelog: map[string]int{}, Redriven: map[string]int{},
		AssemblyParts: map[[2]string]int{}, Assemblies: map[[2]string]int{}}
}

// Add merges o into t.
func (t *Tally) Add(o *Tally) {
	t.Routed += o.Routed
	t.Truncated += o.Truncated
	t.Clamped += o.Clamped
	t.MarksWritten += o.MarksWritten
	t.MarksRead += o.MarksRead
	addCounts(t.Consumed, o.Consumed)
	addCounts(t.Repartitioned, o.Repartitioned)
	addCounts(t.Routes, o.Routes)
	addCounts(t.Written, o.Written)
	addCounts(t.Dirty, o.Dirty)
	addCounts(t.Dropped, o.Dropped)
	addCounts(t.Aggregated, o.Aggregated)
	addCounts(t.Late, o.Late)
	addCounts(t.WindowResults, o.WindowResults)
	addCounts(t.Changelog, o.Changelog)
	addCounts(t.Redriven, o.Redriven)
	addCounts(t.AssemblyParts, o.AssemblyParts)
	addCounts(t.Assemblies, o.Assemblies)
	t.AssemblyObs = append(t.AssemblyObs, o.AssemblyObs...)
	t.Gaps = append(t.Gaps, o.Gaps...)
	for k, v := range o.StateOverflow {
		t.AddOverflow(k[0], k[1], v)
	}
	for k, v := range o.EventTimes {
		if t.EventTimes == nil {
			t.EventTimes = map[string]RouteTimes{}
		}
		rt, ok := t.EventTimes[k]
		if !ok || v.Newest > rt.Newest {
			rt.Newest = v.Newest
		}
		rt.N += v.N
		t.EventTimes[k] = rt
	}
	for k, v := range o.ComputedTopics {
		if t.ComputedTopics == nil {
			t.ComputedTopics = map[[2]string]int{}
		}
		t.ComputedTopics[k] += v
	}
}

func addCounts[K comparable](dst, src map[K]int) {
	for k, v := range src {
		dst[k] += v
	}
}

// Empty reports whether the tally counts nothing at all (no records, no
// window results, no state changes).
func (t *Tally) Empty() bool {
	return t.Records() == 0 && len(t.WindowResults) == 0 && len(t.Changelog) == 0 && len(t.Assemblies) == 0 &&
		t.MarksWritten == 0 && t.MarksRead == 0 && len(t.Gaps) == 0
}

// Records is the number of consumed records the tally covers: input
// and repartitioned records.
func (t *Tally) Records() int {
	n := 0
	for _, v := range t.Consumed {
		n += v
	}
	for _, v := range t.Repartitioned {
		n += v
	}
	return n
}

// AddWritten counts n records of route acknowledged on topic.
func (t *Tally) AddWritten(route, topic string, n int) {
	if n == 0 {
		return
	}
	if t.Written == nil {
		t.Written = map[[2]string]int{}
	}
	t.Written[[2]string{route, topic}] += n
}

// Observe adds a committed tally to the counters.
func (m *Metrics) Observe(t *Tally) {
	for k, v := range t.Consumed {
		m.Consumed.WithLabelValues(k).Add(float64(v))
	}
	for k, v := range t.Repartitioned {
		m.Repartitioned.WithLabelValues(k).Add(float64(v))
	}
	m.Routed.Add(float64(t.Routed))
	for k, v := range t.Routes {
		m.RouteIn.WithLabelValues(k).Add(float64(v))
		m.RouteRecords.WithLabelValues(k).Add(float64(v))
	}
	for k, v := range t.Written {
		// A computed topic's series are bounded as its route's are.
		m.RouteWritten.WithLabelValues(k[0], m.topicLabel(k[0], k[1])).Add(float64(v))
	}
	for k, v := range t.Dirty {
		m.Dirty.WithLabelValues(k[0], k[1]).Add(float64(v))
	}
	for k, v := range t.Dropped {
		m.Dropped.WithLabelValues(k).Add(float64(v))
	}
	m.DirtyTruncated.Add(float64(t.Truncated))
	m.Clamped.Add(float64(t.Clamped))
	m.Marks.WithLabelValues("written").Add(float64(t.MarksWritten))
	m.Marks.WithLabelValues("read").Add(float64(t.MarksRead))
	for k, v := range t.Aggregated {
		m.Aggregated.WithLabelValues(k).Add(float64(v))
	}
	for k, v := range t.Late {
		m.Late.WithLabelValues(k).Add(float64(v))
	}
	for k, v := range t.WindowResults {
		m.WindowResults.WithLabelValues(k[0], k[1]).Add(float64(v))
	}
	for k, v := range t.Changelog {
		m.Changelog.WithLabelValues(k).Add(float64(v))
	}
	for k, v := range t.Redriven {
		m.Redriven.WithLabelValues(k).Add(float64(v))
	}
	m.observeAssemblies(t)
	m.observeLimits(t)
	m.observeComputed(t)
	for _, g := range t.Gaps {
		m.InputLost.WithLabelValues(g.Topic, strconv.Itoa(int(g.Partition))).Add(float64(g.Offsets()))
	}
}

// Snapshot is the current value of the record counters, summed over
// labels where a single number is wanted. The demo's live summary and
// the tests read it.
type Snapshot struct {
	Consumed float64 `json:"consumed"` // input records
	// Repartitioned is stage two's records (window and assembly
	// repartition topics).
	Repartitioned float64            `json:"repartitioned"`
	Routed        float64            `json:"routed"`
	Routes        map[string]float64 `json:"routes"` // records in, by route
	// Written is the records written and committed, by topic.
	Written map[string]float64 `json:"written"`
	// WrittenBy is the route that wrote each topic of Written (a computed
	// topic's route among them).
	WrittenBy map[string]string `json:"-"`
	Dirty     float64           `json:"dirty"`
	Dropped   float64           `json:"dropped"`
	Commits   float64           `json:"commits"`
	Aborts    float64           `json:"aborts"`
	Lag       float64           `json:"lag"`
	// Window stage.
	Aggregated float64            `json:"aggregated"`
	Late       float64            `json:"late"`
	Results    map[string]float64 `json:"window_results"` // by kind
	// Assembly stage: parts by outcome, assemblies by result.
	AssemblyParts map[string]float64 `json:"assembly_parts"`
	Assemblies    map[string]float64 `json:"assemblies"`
	// State limits: records sent to overflow routes (on_overflow: route)
	// and windows or assemblies evicted (on_overflow: evict).
	Overflowed float64 `json:"overflowed"`
	Evicted    float64 `json:"evicted"`
	// Lost is the offsets of consumed partitions the broker deleted
	// before they were read: never consumed, so not in the conservation
	// sum, but never silent either.
	Lost float64 `json:"lost"`
}

// Snapshot gathers the registry and sums the record counters.
func (m *Metrics) Snapshot() Snapshot {
	s := Snapshot{Routes: map[string]float64{}, Written: map[string]float64{}, WrittenBy: map[string]string{}, Results: map[string]float64{}, AssemblyParts: map[string]float64{}, Assemblies: map[string]float64{}}
	mfs, err := m.Registry.Gather()
	if err != nil {
		return s
	}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			v := mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
			switch mf.GetName() {
			case NameConsumed:
				s.Consumed += v
			case NameRepartitionConsumed:
				s.Repartitioned += v
			case NameRouted:
				s.Routed += v
			case NameRouteIn:
				s.Routes[label(mt, "route")] += v
			case NameRouteWritten:
				s.Written[label(mt, "topic")] += v
				s.WrittenBy[label(mt, "topic")] = label(mt, "route")
			case NameDirty:
				s.Dirty += v
			case NameDropped:
				s.Dropped += v
			case NameInputLost:
				s.Lost += v
			case NameCommits:
				s.Commits += v
			case NameAborts:
				s.Aborts += v
			case NameConsumerLag:
				s.Lag += v
			case NameAggregated:
				s.Aggregated += v
			case NameLate:
				s.Late += v
			case NameWindowResults:
				for _, l := range mt.GetLabel() {
					if l.GetName() == "kind" {
						s.Results[l.GetValue()] += v
					}
				}
			case NameStateOverflow:
				for _, l := range mt.GetLabel() {
					if l.GetName() == "policy" && l.GetValue() == PolicyRoute {
						s.Overflowed += v
					} else if l.GetName() == "policy" {
						s.Evicted += v
					}
				}
			case NameAssemblyParts, NameAssemblies:
				for _, l := range mt.GetLabel() {
					switch l.GetName() {
					case "outcome":
						s.AssemblyParts[l.GetValue()] += v
					case "result":
						s.Assemblies[l.GetValue()] += v
					}
				}
			}
		}
	}
	return s
}

// Conserved reports whether every consumed record is accounted for:
// consumed + repartitioned = routed + dirty + dropped + aggregated +
// late + assembly parts + overflowed (repartitioned records a state
// limit sent to an overflow route). A record routed to a window route or
// taken as a part counts as routed at stage one, and its repartitioned
// copy as aggregated, late, an assembly part (any outcome) or dirty at
// stage two.
func (s Snapshot) Conserved() bool {
	parts := 0.0
	for _, v := range s.AssemblyParts {
		parts += v
	}
	return s.Consumed+s.Repartitioned == s.Routed+s.Dirty+s.Dropped+s.Aggregated+s.Late+parts+s.Overflowed
}

// label is the value of a metric's label name ("" when it has none).
func label(mt *dto.Metric, name string) string {
	for _, l := range mt.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// State limits (limits: on window and assembly routes).
// NameStateOverflow counts, by route and policy, the records a full task
// sent to the route's overflow route (policy route; these are a term of
// the conservation sum) and the windows or assemblies it evicted early
// (policy evict).
const (
	NameStateOverflow = "sidestream_state_overflow_total"
	PolicyRoute       = "route"
	PolicyEvict       = "evict"
	// ResultEvicted is the sidestream_assemblies_total result of an
	// incomplete assembly that on_overflow: evict emitted early.
	ResultEvicted = "evicted"
)

// AddOverflow counts n state limit decisions of route under policy.
func (t *Tally) AddOverflow(route, policy string, n int) {
	if n == 0 {
		return
	}
	if t.StateOverflow == nil {
		t.StateOverflow = map[[2]string]int{}
	}
	t.StateOverflow[[2]string{route, policy}] += n
}

func (m *Metrics) observeLimits(t *Tally) {
	for k, v := range t.StateOverflow {
		m.StateOverflow.WithLabelValues(k[0], k[1]).Add(float64(v))
	}
}

// Faults the router reports rather than works around.
const (
	// NameChangelogLoss counts the times a stateful task found that its
	// changelog no longer holds the state it must restore, by route,
	// reason (records_deleted, changelog_empty, checkpoint_past_end,
	// checkpoint_below_start) and action (fail: the task does not
	// process; start_empty: state.on_changelog_loss let it start).
	NameChangelogLoss = "sidestream_changelog_loss_total"
	// NameAuthzRefused counts transactions aborted because the broker
	// refused a write for want of an ACL, by topic.
	NameAuthzRefused = "sidestream_authorization_refused_total"
	// NameInputLost counts, by topic and partition, the offsets of a
	// consumed topic (an input or a repartition topic) the broker deleted
	// before the router read them, skipped under on_gap: skip. Counted
	// with the commit that moved past them.
	NameInputLost = "sidestream_input_records_lost_total"
	// NameInputGapStopped is 1 for a consumed partition whose gap stopped
	// the router under on_gap: fail, by topic and partition.
	NameInputGapStopped = "sidestream_input_gap_stopped"
	// NameRouteHeld is 1 for a stateful route held because its stored
	// state was written with another spec (a breaking change): it does
	// not process while every other route goes on; 0 otherwise.
	NameRouteHeld = "sidestream_route_held"
	// NamePurged counts repartition records deleted below the group's
	// committed offsets (DeleteRecords), by topic.
	NamePurged = "sidestream_repartition_purged_records_total"
	// NamePurgeErrors counts purges of a repartition topic that failed,
	// by topic.
	NamePurgeErrors = "sidestream_repartition_purge_errors_total"
)

type faultMetrics struct {
	ChangelogLoss *prometheus.CounterVec // route, reason, action
	AuthzRefused  *prometheus.CounterVec // topic
	InputLost     *prometheus.CounterVec // topic, partition
	InputGapStop  *prometheus.GaugeVec   // topic, partition
	RouteHeld     *prometheus.GaugeVec   // route
	Purged        *prometheus.CounterVec // topic
	PurgeErrors   *prometheus.CounterVec // topic
}

func newFaultMetrics(r *prometheus.Registry) faultMetrics {
	f := faultMetrics{
		ChangelogLoss: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameChangelogLoss,
			Help: "Restores that found state missing from a changelog (records deleted, topic deleted or recreated, local checkpoint outside it), by route, reason and action (fail, start_empty)."}, []string{"route", "reason", "action"}),
		AuthzRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameAuthzRefused,
			Help: "Transactions aborted because the broker refused a write to a topic (authorization failed), by topic."}, []string{"topic"}),
	}
	f.InputLost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameInputLost,
		Help: "Offsets of consumed partitions (inputs and repartition topics) the broker deleted before the router read them (retention, DeleteRecords), skipped under on_gap: skip, by topic and partition."}, []string{"topic", "partition"})
	f.InputGapStop = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameInputGapStopped,
		Help: "1 for a consumed partition whose deleted records stopped the router (on_gap: fail), by topic and partition."}, []string{"topic", "partition"})
	f.RouteHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameRouteHeld,
		Help: "1 for a stateful route held because its state was written with another spec (a breaking change; /readyz says what differs and the remedies), by route; 0 otherwise."}, []string{"route"})
	f.Purged = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NamePurged,
		Help: "Repartition records deleted below the consumer group's committed offsets, by topic."}, []string{"topic"})
	f.PurgeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NamePurgeErrors,
		Help: "Failed purges (offset fetch, list or DeleteRecords) of a repartition topic, by topic."}, []string{"topic"})
	r.MustRegister(f.ChangelogLoss, f.AuthzRefused, f.InputLost, f.InputGapStop, f.RouteHeld, f.Purged, f.PurgeErrors)
	return f
}

// KafkaHooks is the franz-go client plugin (kprom) for one client: pass
// it to kgo.WithHooks of that client only. kprom registers its metrics
// when the client starts and unregisters them when it closes, and sets
// its own fields at the start: a plugin shared by a session's client and
// the next one would be written by the new client while the old one's
// last broker reads still read it (a data race), so each gets its own.
// The registry holds one session's client at a time, so the names never
// clash.
func (m *Metrics) KafkaHooks() *kprom.Metrics {
	return kprom.NewMetrics(KafkaClientNamspace, kprom.Registerer(m.Registry), kprom.Gatherer(m.Registry))
}
