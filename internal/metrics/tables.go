package metrics

import "github.com/prometheus/client_golang/prometheus"

// Lookup table metric names (tables:, internal/lookup). Labels: the
// table's name, bounded by the topology.
const (
	NameTableRows        = "sidestream_table_rows"
	NameTableBytes       = "sidestream_table_bytes"
	NameTableLoadSeconds = "sidestream_table_load_seconds"
	NameTableLoaded      = "sidestream_table_loaded"
	NameTableLag         = "sidestream_table_lag_records"
	NameTableLookups     = "sidestream_table_lookups_total"
	NameTableUndecodable = "sidestream_table_rows_undecodable_total"
	NameTableRefused     = "sidestream_table_rows_refused_total"
	NameTableLoadRecords = "sidestream_table_load_records"
	NameTableRebuilds    = "sidestream_table_store_rebuilds_total"
)

// Lookup results (label values of NameTableLookups).
const (
	LookupHit    = "hit"
	LookupMiss   = "miss"
	LookupTooOld = "too_old"
)

// TableMetrics are the collectors of the lookup tables.
type TableMetrics struct {
	Rows        *prometheus.GaugeVec   // table: entries kept (keys, or versions as_of)
	Bytes       *prometheus.GaugeVec   // table
	LoadSeconds *prometheus.GaugeVec   // table
	Loaded      *prometheus.GaugeVec   // table: 1 once read to the end seen at start
	Lag         *prometheus.GaugeVec   // table: records behind the topic's end
	Lookups     *prometheus.CounterVec // table, result
	Undecodable *prometheus.CounterVec // table
	Refused     *prometheus.CounterVec // table
	LoadRecords *prometheus.GaugeVec   // table: records the load read
	Rebuilds    *prometheus.CounterVec // table: pebble stores wiped
}

// NewTableMetrics builds the table collectors and registers them on r.
func NewTableMetrics(r prometheus.Registerer) *TableMetrics {
	m := &TableMetrics{
		Rows: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameTableRows,
			Help: "Entries a lookup table keeps: keys (current) or versions (as_of)."}, []string{"table"}),
		Bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameTableBytes,
			Help: "Estimated bytes of a lookup table's kept rows (what limits.max_bytes bounds)."}, []string{"table"}),
		LoadSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameTableLoadSeconds,
			Help: "Seconds the first load of a lookup table took (its topic read to the end seen at start)."}, []string{"table"}),
		Loaded: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameTableLoaded,
			Help: "1 once a lookup table is loaded; records are processed only when every table is."}, []string{"table"}),
		Lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameTableLag,
			Help: "Records of a lookup table's topic not yet applied (its end less the position read)."}, []string{"table"}),
		Lookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameTableLookups,
			Help: "lookup() calls, by table and result (hit, miss, too_old: before an as_of table's history)."}, []string{"table", "result"}),
		Undecodable: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameTableUndecodable,
			Help: "Table rows that are no JSON object, or lack their key or time field: skipped (the key keeps its row)."}, []string{"table"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameTableRefused,
			Help: "New table keys refused by the table's limits (max_entries, max_bytes)."}, []string{"table"}),
		LoadRecords: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameTableLoadRecords,
			Help: "Records the load of a lookup table read: its whole topic, or (store: pebble) only those written after its checkpoint."}, []string{"table"}),
		Rebuilds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameTableRebuilds,
			Help: "Times a lookup table's Pebble store was wiped and its whole topic read again (settings or topic changed, records deleted past its checkpoint, checkpoint older than delete.retention.ms); the reason is logged."}, []string{"table"}),
	}
	r.MustRegister(m.Rows, m.Bytes, m.LoadSeconds, m.Loaded, m.Lag, m.Lookups, m.Undecodable, m.Refused, m.LoadRecords, m.Rebuilds)
	return m
}

// Preset sets every series of table at 0, so a dashboard sees it before
// its first event.
func (m *TableMetrics) Preset(table string) {
	m.Rows.WithLabelValues(table)
	m.Bytes.WithLabelValues(table)
	m.Loaded.WithLabelValues(table)
	m.Lag.WithLabelValues(table)
	m.LoadRecords.WithLabelValues(table)
	m.Rebuilds.WithLabelValues(table)
	for _, r := range []string{LookupHit, LookupMiss, LookupTooOld} {
		m.Lookups.WithLabelValues(table, r)
	}
	m.Undecodable.WithLabelValues(table)
	m.Refused.WithLabelValues(table)
}
