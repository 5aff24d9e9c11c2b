package runtime

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestSeriesExistAtStart: a new processor's registry already holds, at 0,
// the counter series dashboards and alerts read, before any record.
func TestSeriesExistAtStart(t *testing.T) {
	for _, tc := range []struct {
		example string
		want    []string
	}{
		{"logs-by-level.yaml", []string{
			`sidestream_records_dropped_total{reason="no_route"}`,
			`sidestream_txn_aborts_total{reason="rebalance"}`,
			`sidestream_txn_aborts_total{reason="produce_error"}`,
			`sidestream_records_consumed_total{topic="logs"}`,
			`sidestream_route_records_total{route="warn"}`,
			`sidestream_route_records_in_total{route="warn"}`,
			`sidestream_route_records_written_total{route="warn",topic="logs.warn"}`,
			`sidestream_route_records_written_total{route="dirty",topic="logs.dirty"}`,
			`sidestream_records_dirty_total{reason="schema_violation",stage="schema"}`,
			`sidestream_authorization_refused_total{topic="logs.dirty"}`,
		}},
		{"late-orders.yaml", []string{
			`sidestream_records_late_total{route="revenue"}`,
			`sidestream_records_aggregated_total{route="revenue"}`,
			`sidestream_window_results_total{kind="final",route="revenue"}`,
			`sidestream_changelog_loss_total{action="fail",reason="records_deleted",route="revenue"}`,
			`sidestream_changelog_records_total{route="revenue"}`,
			`sidestream_route_records_written_total{route="revenue",topic="orders.revenue-per-minute"}`,
			`sidestream_route_records_written_total{route="revenue",topic="orders.late"}`,
			`sidestream_repartition_records_consumed_total{topic="late-orders-revenue-repartition"}`,
		}},
		{"assemble-orders.yaml", []string{
			`sidestream_assembly_parts_total{outcome="new",route="assembled"}`,
			`sidestream_assemblies_total{result="expired",route="assembled"}`,
			`sidestream_route_records_written_total{route="assembled",topic="orders.incomplete"}`,
			`sidestream_route_records_written_total{route="assembled",topic="orders.duplicate"}`,
		}},
	} {
		top := exampleAt(t, filepath.Join("../../examples", tc.example), []string{"127.0.0.1:1"})
		p, err := New(top)
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := p.Metrics().Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				have[seriesName(mf.GetName(), m)] = m.GetCounter().GetValue()
			}
		}
		for _, w := range tc.want {
			if v, ok := have[w]; !ok || v != 0 {
				var near []string
				for k := range have {
					if strings.HasPrefix(k, w[:strings.IndexByte(w, '{')]) {
						near = append(near, k)
					}
				}
				slices.Sort(near)
				t.Errorf("%s: %s missing or not 0 (%v %v); have %q", tc.example, w, ok, v, near)
			}
		}
	}
}

func seriesName(name string, m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+`"`+l.GetValue()+`"`)
	}
	slices.Sort(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}
