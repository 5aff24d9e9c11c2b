package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Build and time metric names.
const (
	// NameBuildInfo is 1, with the binary's version, VCS revision and Go
	// version as labels.
	NameBuildInfo = "sidestream_build_info"
	// NameWatermarkTimestamp is each window task's watermark as a Unix
	// time in seconds, as Prometheus wants times. It replaces
	// NameWatermark (epoch milliseconds), which is kept, deprecated, for
	// one release.
	NameWatermarkTimestamp = "sidestream_watermark_timestamp_seconds"
	// NameTopologyInfo is 1, with the topology version stage one routes
	// with (the plan's content fingerprint) as its label: what every
	// output's sidestream.topology.version header names.
	NameTopologyInfo = "sidestream_topology_info"
	// NameReloads counts topology reloads (SIGHUP, POST /reload, --watch)
	// by outcome (ReloadOutcomes).
	NameReloads = "sidestream_reloads_total"
)

// The outcomes of a topology reload, the values of NameReloads' label.
const (
	ReloadApplied   = "applied"   // every change live: the new version routes
	ReloadUnchanged = "unchanged" // the file compiles to the running version
	ReloadRefused   = "refused"   // a change the running router cannot apply
	ReloadInvalid   = "invalid"   // the file does not load or compile
	ReloadFailed    = "failed"    // preparing or installing it failed
)

// ReloadOutcomes are the label values of NameReloads, preset at 0.
var ReloadOutcomes = []string{ReloadApplied, ReloadUnchanged, ReloadRefused, ReloadInvalid, ReloadFailed}

type buildMetrics struct {
	BuildInfo          *prometheus.GaugeVec // version, revision, goversion
	WatermarkTimestamp *prometheus.GaugeVec // route, partition
	TopologyInfo       *prometheus.GaugeVec // version
	Reloads            *prometheus.CounterVec
}

func newBuildMetrics(r *prometheus.Registry) buildMetrics {
	b := buildMetrics{
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameBuildInfo,
			Help: "1, labelled with the router's version, VCS revision and Go version."}, []string{"version", "revision", "goversion"}),
		WatermarkTimestamp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameWatermarkTimestamp,
			Help: "Watermark of each window task, as a Unix time in seconds."}, []string{"route", "partition"}),
		TopologyInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameTopologyInfo,
			Help: "1, labelled with the topology version stage one routes with (the plan's content fingerprint; each output's sidestream.topology.version header)."}, []string{"version"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameReloads,
			Help: "Topology reloads (SIGHUP, POST /reload, --watch), by outcome: applied, unchanged, refused, invalid, failed."}, []string{"outcome"}),
	}
	for _, o := range ReloadOutcomes {
		b.Reloads.WithLabelValues(o)
	}
	r.MustRegister(b.BuildInfo, b.WatermarkTimestamp, b.TopologyInfo, b.Reloads)
	return b
}

// SetTopologyVersion publishes the running topology version (one
// series, value 1).
func (m *Metrics) SetTopologyVersion(version string) {
	m.TopologyInfo.Reset()
	m.TopologyInfo.WithLabelValues(version).Set(1)
}

// SetBuildInfo publishes the binary's identity (one series, value 1).
func (m *Metrics) SetBuildInfo(version, revision, goVersion string) {
	m.BuildInfo.Reset()
	m.BuildInfo.WithLabelValues(version, revision, goVersion).Set(1)
}

// Series names the label values a topology can produce, so that Preset
// creates each counter series at 0 before its first increment: a
// dashboard then shows 0 rather than no data, and rate() or increase()
// in an alert sees the first increment (a series born at 1 has no
// increase).
type Series struct {
	Consumed      []string    // input topics
	Repartitioned []string    // repartition topics
	Redriven      []string    // input topics
	Routes        []string    // every route
	Written       [][2]string // route, topic: every topic the router writes records to
	Dirty         [][2]string // stage, reason
	Dropped       []string    // reasons
	Aborts        []string    // reasons
	Stranded      []string    // outcomes (exactly-once only)
	Authz         []string    // topics written
	Aggregated    []string    // window routes
	WindowResults [][2]string // route, kind
	Changelog     []string    // stateful routes
	ChangelogLoss [][3]string // route, reason, action
	AssemblyParts [][2]string // route, outcome
	Assemblies    [][2]string // route, result
	StateOverflow [][2]string // route, policy
}

// Preset creates every series s names at 0.
func (m *Metrics) Preset(s Series) {
	for _, t := range s.Consumed {
		m.Consumed.WithLabelValues(t)
	}
	for _, t := range s.Redriven {
		m.Redriven.WithLabelValues(t)
	}
	for _, t := range s.Repartitioned {
		m.Repartitioned.WithLabelValues(t)
	}
	for _, r := range s.Routes {
		m.RouteIn.WithLabelValues(r)
		m.RouteRecords.WithLabelValues(r)
	}
	for _, k := range s.Written {
		m.RouteWritten.WithLabelValues(k[0], k[1])
	}
	for _, k := range s.Dirty {
		m.Dirty.WithLabelValues(k[0], k[1])
	}
	for _, r := range s.Dropped {
		m.Dropped.WithLabelValues(r)
	}
	for _, r := range s.Aborts {
		m.Aborts.WithLabelValues(r)
	}
	for _, o := range s.Stranded {
		m.StrandedRepairs.WithLabelValues(o)
	}
	for _, t := range s.Authz {
		m.AuthzRefused.WithLabelValues(t)
	}
	for _, r := range s.Aggregated {
		m.Aggregated.WithLabelValues(r)
		m.Late.WithLabelValues(r)
	}
	for _, k := range s.WindowResults {
		m.WindowResults.WithLabelValues(k[0], k[1])
	}
	for _, r := range s.Changelog {
		m.Changelog.WithLabelValues(r)
		m.RestoredRecords.WithLabelValues(r)
	}
	for _, k := range s.ChangelogLoss {
		m.ChangelogLoss.WithLabelValues(k[0], k[1], k[2])
	}
	for _, k := range s.AssemblyParts {
		m.AssemblyParts.WithLabelValues(k[0], k[1])
	}
	for _, k := range s.Assemblies {
		m.Assemblies.WithLabelValues(k[0], k[1])
	}
	for _, k := range s.StateOverflow {
		m.StateOverflow.WithLabelValues(k[0], k[1])
	}
	m.Marks.WithLabelValues("written")
	m.Marks.WithLabelValues("read")
}
