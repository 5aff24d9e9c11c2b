package metrics

import "github.com/prometheus/client_golang/prometheus"

// Schema registry metric names (registry-backed inputs: Avro, Protobuf,
// JSON Schema). A lookup is one record's schema id resolved; a hit is one
// served from the cache, so lookups - hits are the ids fetched (several
// concurrent lookups of one id share one fetch). Errors by kind:
// unknown_id (the registry answered 404: those records go dirty),
// unavailable (unreachable, timeout, 5xx, auth: the task waits and
// retries), bad_schema (a schema that does not compile).
const (
	NameRegistryLookups   = "sidestream_schema_registry_lookups_total"
	NameRegistryCacheHits = "sidestream_schema_registry_cache_hits_total"
	NameRegistryErrors    = "sidestream_schema_registry_errors_total"
)

// RegistryMetrics are the collectors of the schema registry cache. It
// satisfies registry.Hooks; pass it to registry.WithHooks.
type RegistryMetrics struct {
	Lookups   prometheus.Counter
	CacheHits prometheus.Counter
	Errors    *prometheus.CounterVec // kind
}

// NewRegistryMetrics builds the registry collectors and registers them on
// r (the process's Metrics.Registry).
func NewRegistryMetrics(r prometheus.Registerer) *RegistryMetrics {
	m := &RegistryMetrics{
		Lookups: prometheus.NewCounter(prometheus.CounterOpts{Name: NameRegistryLookups,
			Help: "Schema ids resolved for registry-framed records (cache hits included)."}),
		CacheHits: prometheus.NewCounter(prometheus.CounterOpts{Name: NameRegistryCacheHits,
			Help: "Schema id lookups served from the cache."}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameRegistryErrors,
			Help: "Schema registry errors, by kind (unknown_id, unavailable, bad_schema)."}, []string{"kind"}),
	}
	for _, k := range []string{"unknown_id", "unavailable", "bad_schema"} {
		m.Errors.WithLabelValues(k) // preset at 0
	}
	r.MustRegister(m.Lookups, m.CacheHits, m.Errors)
	return m
}

// OnLookup counts one lookup; hit: served from the cache.
func (m *RegistryMetrics) OnLookup(hit bool) {
	m.Lookups.Inc()
	if hit {
		m.CacheHits.Inc()
	}
}

// OnError counts one registry error of a kind.
func (m *RegistryMetrics) OnError(kind string) { m.Errors.WithLabelValues(kind).Inc() }
