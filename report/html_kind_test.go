package report

import (
	"slices"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// chartsKind declares charts of its own, registered only in this test
// binary.
const chartsKind = "testcharts"

func init() {
	scenarios.Register(scenarios.Kind{
		Name: chartsKind,
		New:  func() scenarios.Phase { return nil },
		Metrics: []metrics.Def{
			{Name: "rooms_per_s", Kind: metrics.Float}, {Name: "spread_p50", Kind: metrics.Duration},
			{Name: "spread_p99", Kind: metrics.Duration}, {Name: "never", Kind: metrics.Float},
		},
		Charts: []scenarios.Chart{
			{ID: "rooms", Title: "Rooms per second", Unit: "rooms/s", Note: "rooms filled", Series: []scenarios.ChartSeries{{Metric: "rooms_per_s"}}},
			{ID: "spread", Title: "Spread", Unit: "ms", Series: []scenarios.ChartSeries{{Name: "p50", Metric: "spread_p50"}, {Name: "p99", Metric: "spread_p99"}}, Needs: "spread_p99"},
			{ID: "none", Title: "Nothing", Series: []scenarios.ChartSeries{{Metric: "never"}}},
		},
	})
}

// TestKindCharts: the charts a kind declares are drawn from its metrics,
// durations in ms, a result without Needs left out, one series named
// after the run, several by their names; a chart no result has is not
// drawn.
func TestKindCharts(t *testing.T) {
	run := &result.Run{Schema: result.Schema, Results: []result.Result{
		{Server: "a", Phase: "p", Kind: chartsKind, OK: true, Metrics: metrics.Values{
			"rooms_per_s": 12.5, "spread_p50": 2 * time.Millisecond, "spread_p99": 8 * time.Millisecond}},
		{Server: "b", Phase: "p", Kind: chartsKind, OK: true, Metrics: metrics.Values{"rooms_per_s": 7.0, "spread_p50": 3e6}},
	}}
	charts := map[string]chart{}
	for _, sec := range chartModel([]*result.Run{run}, runLabels([]*result.Run{run})) {
		for _, c := range sec.Charts {
			charts[c.ID] = c
		}
	}
	if _, ok := charts["c0-none"]; ok {
		t.Error("a chart no result has was drawn")
	}
	rooms := charts["c0-rooms"]
	if rooms.Unit != "rooms/s" || rooms.Note != "rooms filled" || len(rooms.Series) != 1 || rooms.Series[0].Name != "this run" ||
		!slices.Equal(barValues(rooms.Series[0]), []float64{12.5, 7}) {
		t.Errorf("rooms chart %+v", rooms)
	}
	spread := charts["c0-spread"]
	if len(spread.Series) != 2 || spread.Series[0].Name != "p50" || spread.Series[1].Name != "p99" ||
		!slices.Equal(barValues(spread.Series[0]), []float64{2, -1}) || !slices.Equal(barValues(spread.Series[1]), []float64{8, -1}) {
		t.Errorf("spread chart %+v", spread)
	}
}
