package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// TestHistogramPoints: the spectrum of a stored histogram reaches as far
// as its count resolves, ending at the maximum; bad input is not a
// spectrum.
func TestHistogramPoints(t *testing.T) {
	spectrum := func(n int) string {
		h := client.NewHist()
		for v := 1; v <= n; v++ {
			_ = h.RecordValue(int64(v) * int64(time.Microsecond))
		}
		return scenarios.HistString(h)
	}
	for _, tc := range []struct {
		name      string
		hist      string
		ok        bool
		last      float64 // last percentile
		p50, tail float64 // ms at 50% and at the last point, within 0.1%
	}{
		{"100k: every point", spectrum(100_000), true, 99.999, 50, 100},
		{"1000: ends at 99.9 with the max", spectrum(1000), true, 99.95, 0.5, 1},
		{"one sample", spectrum(1), true, 50, 0.001, 0.001},
		{"empty", "", false, 0, 0, 0},
		{"not base64", "%%%", false, 0, 0, 0},
		{"not a histogram", "aGVsbG8=", false, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts, ok := histogramPoints(tc.hist)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			last := pts[len(pts)-1]
			if last[0] != tc.last || !within(pts[0][1], tc.p50) || !within(last[1], tc.tail) || pts[0][0] != 50 {
				t.Errorf("points %v: want 50%% at %v ms, %v%% at %v ms", pts, tc.p50, tc.last, tc.tail)
			}
			for i := 1; i < len(pts); i++ {
				if pts[i][0] <= pts[i-1][0] || pts[i][1] < pts[i-1][1] {
					t.Errorf("not increasing at %d: %v", i, pts)
				}
			}
		})
	}
}

// within reports whether got is within 0.1% of want.
func within(got, want float64) bool { return got >= want*0.999 && got <= want*1.001 }

// TestPercentileChartSources: the percentile chart takes a stored
// histogram's points (to 99.999%) and falls back to the p50..p999 metrics
// for results without one (files written before histograms were stored).
func TestPercentileChartSources(t *testing.T) {
	h := client.NewHist()
	for v := int64(1); v <= 200_000; v++ {
		_ = h.RecordValue(v * 1000)
	}
	run := &result.Run{Results: []result.Result{
		{Server: "new", Phase: "echo", Kind: "echo", OK: true, Histogram: scenarios.HistString(h),
			Metrics: metrics.Values{"tps": 1.0, "p50": time.Millisecond, "p99": 2 * time.Millisecond}},
		{Server: "old", Phase: "echo", Kind: "echo", OK: true,
			Metrics: metrics.Values{"tps": 1.0, "p50": time.Millisecond, "p99": 2 * time.Millisecond, "p999": 3 * time.Millisecond}},
	}}
	var lat *chart
	for _, sec := range chartModel([]*result.Run{run}, nil) {
		for i := range sec.Charts {
			if sec.Charts[i].Type == chartPercentiles {
				lat = &sec.Charts[i]
			}
		}
	}
	if lat == nil || len(lat.Series) != 2 {
		t.Fatalf("percentile chart %+v", lat)
	}
	got := map[string][][2]float64{}
	for _, s := range lat.Series {
		got[s.Name] = s.Points
	}
	if n := got["new"]; len(n) != len(spectrumPoints) || n[len(n)-1][0] != 99.999 || !within(n[0][1], 100) {
		t.Errorf("from the histogram: %v", n)
	}
	if o := got["old"]; len(o) != 3 || o[2] != [2]float64{99.9, 3} {
		t.Errorf("from the metrics: %v", o)
	}
}

// richRun is a run whose results carry what the newer charts draw: an
// echo phase's timeline, stored latency histograms, a search's steps (one
// failing, one client-bound) and a broadcast's fan-out.
func richRun() *result.Run {
	hist := func(scale int64) string {
		h := client.NewHist()
		for v := int64(1); v <= 50_000; v++ {
			_ = h.RecordValue(v * scale)
		}
		return scenarios.HistString(h)
	}
	timeline := func(tps int64) []result.Point {
		var out []result.Point
		for t := range 5 {
			out = append(out, result.Point{T: t, Sent: tps, Recv: tps - int64(t), P50: time.Duration(t+1) * time.Millisecond,
				P99: time.Duration(t+3) * time.Millisecond, Max: time.Duration(t+9) * time.Millisecond})
		}
		return out
	}
	step := func(target, achieved float64, p99 time.Duration, verdict string) result.Step {
		return result.Step{Target: target, Conns: 100, Achieved: achieved, P50: p99 / 4, P99: p99, P999: 2 * p99,
			ServerCPU: target / 1000, ClientCPU: target / 2000, ClientBound: verdict == "client-bound", Verdict: verdict}
	}
	lat := metrics.Values{"p50": time.Millisecond, "p99": 5 * time.Millisecond, "p999": 9 * time.Millisecond}
	with := func(v metrics.Values) metrics.Values {
		out := metrics.Values{}
		for k, x := range lat {
			out[k] = x
		}
		for k, x := range v {
			out[k] = x
		}
		return out
	}
	return &result.Run{Schema: result.Schema, Results: []result.Result{
		{Server: "gws", Framework: "gws", Phase: "echo", Kind: "echo", OK: true, Metrics: with(metrics.Values{"tps": 52000.0}),
			Timeline: timeline(52000), Histogram: hist(1000)},
		{Server: "gorilla", Framework: "gorilla", Phase: "echo", Kind: "echo", OK: true, Metrics: with(metrics.Values{"tps": 31000.0}),
			Timeline: timeline(31000), Histogram: hist(1700)},
		{Server: "gws", Framework: "gws", Phase: "capacity", Kind: "search", OK: true, Metrics: with(metrics.Values{"capacity": 40000.0}),
			Steps: []result.Step{step(10000, 10000, 2*time.Millisecond, "pass"), step(20000, 19990, 3*time.Millisecond, "pass"),
				step(40000, 39800, 4*time.Millisecond, "pass"), step(80000, 52000, 900*time.Millisecond, "fail"),
				step(60000, 51000, 300*time.Millisecond, "fail")},
			Stop: "slo failed at 60000 msg/s"},
		{Server: "gorilla", Framework: "gorilla", Phase: "capacity", Kind: "search", OK: true, Metrics: with(metrics.Values{"capacity": 30000.0}),
			Steps: []result.Step{step(10000, 10000, 2*time.Millisecond, "pass"), step(20000, 20000, 3*time.Millisecond, "pass"),
				step(40000, 33000, 6*time.Millisecond, "client-bound")},
			Stop: "client-bound at 40000 msg/s"},
		{Server: "gws", Framework: "gws", Phase: "fanout", Kind: "broadcast", OK: true, Histogram: hist(3000),
			Metrics: with(metrics.Values{"delivery_rate": 99000.0, "fanout_p50": 4 * time.Millisecond, "fanout_p99": 12 * time.Millisecond})},
		{Server: "gorilla", Framework: "gorilla", Phase: "fanout", Kind: "broadcast", OK: true,
			Metrics: with(metrics.Values{"delivery_rate": 61000.0, "fanout_p50": 6 * time.Millisecond, "fanout_p99": 30 * time.Millisecond})},
	}}
}

// TestRichCharts: the echo timeline, the spectrum from stored histograms
// and the search steps are charted, with the values of the results.
func TestRichCharts(t *testing.T) {
	runs := []*result.Run{richRun()}
	charts := map[string]chart{}
	for _, sec := range chartModel(runs, runLabels(runs)) {
		for _, c := range sec.Charts {
			charts[c.ID] = c
		}
	}
	points := func(id, series string) [][2]float64 {
		for _, s := range charts[id].Series {
			if s.Name == series {
				return s.Points
			}
		}
		return nil
	}
	for _, tc := range []struct {
		id, series string
		n          int
		first      [2]float64
		last       [2]float64
	}{
		{"c0-tl-recv", "gws", 5, [2]float64{0, 52000}, [2]float64{4, 51996}},
		{"c0-tl-p99", "gorilla", 5, [2]float64{0, 3}, [2]float64{4, 7}},
		{"c0-lat", "gws", 11, [2]float64{50, 25}, [2]float64{99.999, 50}},
		{"c1-steps-achieved", "gws", 5, [2]float64{10000, 10000}, [2]float64{80000, 52000}},
		{"c1-steps-achieved", "gws: not passed", 2, [2]float64{60000, 51000}, [2]float64{80000, 52000}},
		{"c1-steps-p99", "gorilla", 3, [2]float64{10000, 2}, [2]float64{40000, 6}},
		{"c1-steps-p99", "gorilla: not passed", 1, [2]float64{40000, 6}, [2]float64{40000, 6}},
	} {
		p := points(tc.id, tc.series)
		if len(p) != tc.n || p[0][0] != tc.first[0] || !within(p[0][1], tc.first[1]) || p[len(p)-1][0] != tc.last[0] || !within(p[len(p)-1][1], tc.last[1]) {
			t.Errorf("%s %s: %v, want %d points from %v to %v", tc.id, tc.series, p, tc.n, tc.first, tc.last)
		}
	}
	bar := func(id, series string) []float64 {
		for _, s := range charts[id].Series {
			if s.Name == series {
				return barValues(s)
			}
		}
		return nil
	}
	// Categories: gws then gorilla (order of first appearance).
	for _, tc := range []struct {
		id, series string
		want       []float64
	}{
		{"c2-throughput", "this run", []float64{99000, 61000}}, // broadcast's headline: delivery_rate
		{"c2-fanout-lat", "fan-out p50", []float64{4, 6}},
		{"c2-fanout-lat", "fan-out p99", []float64{12, 30}},
		{"c2-fanout-lat", "delivery p99", []float64{5, 5}},
	} {
		if got := bar(tc.id, tc.series); !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: %v, want %v", tc.id, tc.series, got, tc.want)
		}
	}
	if p := points("c2-lat", "gws"); len(p) != 11 || p[len(p)-1][0] != 99.999 || !within(p[10][1], 150) {
		t.Errorf("broadcast spectrum from its histogram: %v", p)
	}
	if p := points("c2-lat", "gorilla"); len(p) != 3 || p[2][0] != 99.9 {
		t.Errorf("broadcast spectrum from its metrics: %v", p)
	}
	for _, s := range charts["c1-steps-achieved"].Series {
		if s.PointsOnly != strings.HasSuffix(s.Name, ": not passed") || s.Color == nil {
			t.Errorf("series %q: points only %v, colour %v", s.Name, s.PointsOnly, s.Color)
		}
	}
}

// barValues are a bar series' values, -1 where a category has none.
func barValues(s chartSeries) []float64 {
	var out []float64
	for _, v := range s.Values {
		if v == nil {
			out = append(out, -1)
		} else {
			out = append(out, *v)
		}
	}
	return out
}
