// Package metrics owns every Prometheus metric sidestream exposes: each
// name is declared here and nowhere else, so the README's table and the
// code cannot drift apart.
//
// It must never import another sidestream package; callers hand it plain
// values. Labels are bounded (topic, route, stage, reason, partition),
// never record keys or IDs.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/plugin/kprom"
)

// Namespace prefixes every metric name.
const Namespace = "sidestream"

// Metric names, in one place. The conservation invariant reads:
//
//	sum(consumed) = routed + sum(dirty) + sum(dropped)
//
// All record counters count only committed work: under exactly-once a
// transaction's counts are added when it commits, so an aborted and
// replayed batch is never counted twice.
const (
	NameConsumed        = "sidestream_records_consumed_total"
	NameRouted          = "sidestream_records_routed_total"
	NameRouteWritten    = "sidestream_route_records_total"
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
	KafkaClientNamspace = "sidestream_kafka" // franz-go client metrics (kprom)
)

// Local state stores (state.store: pebble).
const (
	NameStateWipes = "sidestream_state_wipes_total"
)

// Metrics holds the collectors of one router process.
type Metrics struct {
	Registry *prometheus.Registry

	Consumed       *prometheus.CounterVec // topic
	Routed         prometheus.Counter
	RouteWritten   *prometheus.CounterVec // route
	Dirty          *prometheus.CounterVec // stage, reason
	Dropped        *prometheus.CounterVec // reason
	DirtyTruncated prometheus.Counter
	BatchDuration  prometheus.Histogram
	CommitDuration prometheus.Histogram
	Commits        prometheus.Counter
	Aborts         *prometheus.CounterVec // reason
	ConsumerLag    *prometheus.GaugeVec   // topic, partition
	Ready          prometheus.Gauge
	Assigned       prometheus.Gauge

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

	// Kafka is the franz-go client plugin; pass it to kgo.WithHooks.
	Kafka *kprom.Metrics
}

// New builds and registers every collector on a fresh registry, plus the
// Go runtime and process collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		Consumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameConsumed, Help: "Input records consumed and committed, by input topic.",
		}, []string{"topic"}),
		Routed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameRouted, Help: "Input records that went to at least one route (default route included).",
		}),
		RouteWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameRouteWritten, Help: "Records written to each route's topic (a fan-out record counts once per route).",
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
		Commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameCommits, Help: "Successful commits (transactions under exactly-once, offset commits under at-least-once).",
		}),
		Aborts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameAborts, Help: "Aborted transactions, by reason (rebalance, produce_error, commit_error, shutdown).",
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
	rp := []string{"route", "partition"}
	m.Aggregated = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameAggregated, Help: "Repartitioned records applied to at least one window, by window route."}, []string{"route"})
	m.Late = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameLate, Help: "Records whose every window was already purged, sent to the late route, by window route."}, []string{"route"})
	m.WindowResults = prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameWindowResults, Help: "Window results written, by route and kind (first, update, final, retract)."}, []string{"route", "kind"})
	m.Watermark = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameWatermark, Help: "Watermark of each window task, epoch milliseconds."}, rp)
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
	r.MustRegister(m.Consumed, m.Routed, m.RouteWritten, m.Dirty, m.Dropped, m.DirtyTruncated,
		m.BatchDuration, m.CommitDuration, m.Commits, m.Aborts, m.ConsumerLag, m.Ready, m.Assigned,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.Kafka = kprom.NewMetrics(KafkaClientNamspace, kprom.Registerer(r), kprom.Gatherer(r))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Tally is the counts of one commit: added to the counters only once the
// commit succeeds.
type Tally struct {
	Consumed  map[string]int // topic
	Routed    int
	Routes    map[string]int // route
	Dirty     map[[2]string]int
	Dropped   map[string]int
	Truncated int
	// Window stage, by route.
	Aggregated    map[string]int
	Late          map[string]int
	WindowResults map[[2]string]int // route, kind
	Changelog     map[string]int
}

// NewTally returns an empty tally.
func NewTally() *Tally {
	return &Tally{Consumed: map[string]int{}, Routes: map[string]int{}, Dirty: map[[2]string]int{}, Dropped: map[string]int{},
		Aggregated: map[string]int{}, Late: map[string]int{}, WindowResults: map[[2]string]int{}, Changelog: map[string]int{}}
}

// Add merges o into t.
func (t *Tally) Add(o *Tally) {
	t.Routed += o.Routed
	t.Truncated += o.Truncated
	addCounts(t.Consumed, o.Consumed)
	addCounts(t.Routes, o.Routes)
	addCounts(t.Dirty, o.Dirty)
	addCounts(t.Dropped, o.Dropped)
	addCounts(t.Aggregated, o.Aggregated)
	addCounts(t.Late, o.Late)
	addCounts(t.WindowResults, o.WindowResults)
	addCounts(t.Changelog, o.Changelog)
}

func addCounts[K comparable](dst, src map[K]int) {
	for k, v := range src {
		dst[k] += v
	}
}

// Empty reports whether the tally counts nothing at all (no records, no
// window results, no state changes).
func (t *Tally) Empty() bool {
	return t.Records() == 0 && len(t.WindowResults) == 0 && len(t.Changelog) == 0
}

// Records is the number of input records the tally covers.
func (t *Tally) Records() int {
	n := 0
	for _, v := range t.Consumed {
		n += v
	}
	return n
}

// Observe adds a committed tally to the counters.
func (m *Metrics) Observe(t *Tally) {
	for k, v := range t.Consumed {
		m.Consumed.WithLabelValues(k).Add(float64(v))
	}
	m.Routed.Add(float64(t.Routed))
	for k, v := range t.Routes {
		m.RouteWritten.WithLabelValues(k).Add(float64(v))
	}
	for k, v := range t.Dirty {
		m.Dirty.WithLabelValues(k[0], k[1]).Add(float64(v))
	}
	for k, v := range t.Dropped {
		m.Dropped.WithLabelValues(k).Add(float64(v))
	}
	m.DirtyTruncated.Add(float64(t.Truncated))
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
}

// Snapshot is the current value of the record counters, summed over
// labels where a single number is wanted. The demo's live summary and
// the tests read it.
type Snapshot struct {
	Consumed float64            `json:"consumed"`
	Routed   float64            `json:"routed"`
	Routes   map[string]float64 `json:"routes"`
	Dirty    float64            `json:"dirty"`
	Dropped  float64            `json:"dropped"`
	Commits  float64            `json:"commits"`
	Aborts   float64            `json:"aborts"`
	Lag      float64            `json:"lag"`
	// Window stage.
	Aggregated float64            `json:"aggregated"`
	Late       float64            `json:"late"`
	Results    map[string]float64 `json:"window_results"` // by kind
}

// Snapshot gathers the registry and sums the record counters.
func (m *Metrics) Snapshot() Snapshot {
	s := Snapshot{Routes: map[string]float64{}, Results: map[string]float64{}}
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
			case NameRouted:
				s.Routed += v
			case NameRouteWritten:
				for _, l := range mt.GetLabel() {
					if l.GetName() == "route" {
						s.Routes[l.GetValue()] += v
					}
				}
			case NameDirty:
				s.Dirty += v
			case NameDropped:
				s.Dropped += v
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
			}
		}
	}
	return s
}

// Conserved reports whether every consumed record is accounted for:
// consumed = routed + dirty + dropped + aggregated + late. Consumed counts
// input and repartition records: a record routed to a window route counts
// as routed at stage one, and its repartitioned copy as aggregated, late
// or dirty at stage two.
func (s Snapshot) Conserved() bool {
	return s.Consumed == s.Routed+s.Dirty+s.Dropped+s.Aggregated+s.Late
}
