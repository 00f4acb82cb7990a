package report

import (
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
