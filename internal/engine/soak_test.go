package engine

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// series is n points one interval apart, each from f(i).
func series(n int, every time.Duration, f func(i int) result.SoakPoint) *result.Soak {
	s := &result.Soak{Interval: every}
	for i := range n {
		pt := f(i)
		pt.T = time.Duration(i) * every
		s.Points = append(s.Points, pt)
	}
	return s
}

// TestSoakMetrics: slopes are fitted after the settle time (the first
// fifth by default) and leak? is decided per hour over 5 min or more, or
// per unit of work (churn) over 30 s or more; a warm-up before the settle
// time is not a leak; a drain gives rss_after_drain; too short a phase
// gets slopes but no verdict.
func TestSoakMetrics(t *testing.T) {
	cfg := plan.Soak{LeakThreshold: 64 << 20}
	const MiB = 1 << 20
	perCycle := scenarios.Soak{Per: 100000, Unit: "cycles", RSSPer: "rss_per_100k", LeakPer: 64 * MiB}
	for _, c := range []struct {
		name     string
		s        *result.Soak
		spec     scenarios.Soak
		server   bool
		leak     any     // nil = not written
		rssSlope float64 // < 0: not checked
		warn     string
	}{
		{"flat after a warm-up", series(600, time.Second, func(i int) result.SoakPoint {
			rss := int64(100 * MiB)
			if i < 100 { // warming up for 100 s, inside the settle time (120 s)
				rss = int64(i) * MiB
			}
			return result.SoakPoint{RSS: rss, ClientRSS: 50 * MiB, FDs: 1000, Threads: 8}
		}), scenarios.Soak{}, true, false, 0, ""},
		{"growing 100 MiB/h", series(600, time.Second, func(i int) result.SoakPoint {
			return result.SoakPoint{RSS: 200*MiB + int64(i)*100*MiB/3600, ClientRSS: 50 * MiB}
		}), scenarios.Soak{}, true, true, 100 * MiB, "leak?: the server's RSS grew +100.0 MiB per hour (threshold +64.0 MiB) over 7m59s"},
		{"growing, but 2 min: no verdict", series(120, time.Second, func(i int) result.SoakPoint {
			return result.SoakPoint{RSS: 200*MiB + int64(i)*100*MiB/3600}
		}), scenarios.Soak{}, true, nil, 100 * MiB, ""},
		{"churn leaking 10 KB per cycle", series(60, time.Second, func(i int) result.SoakPoint {
			return result.SoakPoint{RSS: 100*MiB + int64(i)*500*10000, Done: int64(i) * 500}
		}), perCycle, true, true, 500 * 10000 * 3600, "leak?: the server's RSS grew +953.7 MiB per 100,000 cycles"},
		{"churn steady", series(60, time.Second, func(i int) result.SoakPoint {
			return result.SoakPoint{RSS: 100*MiB + int64(i%3)*MiB, Done: int64(i) * 500}
		}), perCycle, true, false, -1, ""},
		{"server not measured", series(600, time.Second, func(i int) result.SoakPoint {
			return result.SoakPoint{ClientRSS: 50 * MiB}
		}), scenarios.Soak{}, false, nil, 0, ""},
	} {
		m := metrics.Values{}
		warns := soakMetrics(m, c.s, c.spec, cfg, c.server)
		if got, ok := m[metrics.Leak]; (c.leak == nil) != !ok || ok && got != c.leak {
			t.Errorf("%s: leak = %v (written %v), want %v", c.name, got, ok, c.leak)
		}
		if c.server && c.rssSlope >= 0 {
			if got := m.Float(metrics.RSSSlope); got < c.rssSlope*0.99-1 || got > c.rssSlope*1.01+1 {
				t.Errorf("%s: rss_slope %.0f, want %.0f", c.name, got, c.rssSlope)
			}
		} else if _, ok := m[metrics.RSSSlope]; ok && !c.server {
			t.Errorf("%s: rss_slope written for a server not measured", c.name)
		}
		if _, ok := m[metrics.ClientRSSSlope]; !ok {
			t.Errorf("%s: no client_rss_slope", c.name)
		}
		if got := strings.Join(warns, "\n"); c.warn == "" && got != "" || !strings.Contains(got, c.warn) {
			t.Errorf("%s: warnings %q, want %q", c.name, got, c.warn)
		}
	}

	// A drain: rss_after_drain is its last reading, and the drain is not
	// fitted (memory falling after the load is not a negative slope).
	s := series(400, time.Second, func(i int) result.SoakPoint {
		if i >= 360 {
			return result.SoakPoint{RSS: 40 * MiB, Drain: true}
		}
		return result.SoakPoint{RSS: 100 * MiB}
	})
	m := metrics.Values{}
	soakMetrics(m, s, scenarios.Soak{}, cfg, true)
	if m.Int(metrics.RSSAfterDrain) != 40*MiB || math.Abs(m.Float(metrics.RSSSlope)) > 1 || s.Settle != 359*time.Second/5 {
		t.Errorf("drain: after %d, slope %v, settle %v", m.Int(metrics.RSSAfterDrain), m.Float(metrics.RSSSlope), s.Settle)
	}
}

// TestSoakThinning: a long series is thinned to at most MaxSoakPoints,
// every other point kept and the interval doubled each time (here points
// come every second whatever the interval: 3072 points, five thinnings).
func TestSoakThinning(t *testing.T) {
	p := &soakProbe{fs: procstat.FS{}, every: time.Second}
	p.s.Interval = time.Second
	for i := range 3 * result.MaxSoakPoints {
		p.add(result.SoakPoint{T: time.Duration(i) * time.Second})
	}
	if n := len(p.s.Points); n >= result.MaxSoakPoints || n < result.MaxSoakPoints/2 {
		t.Errorf("%d points kept", n)
	}
	if p.every != 32*time.Second || p.s.Interval != p.every {
		t.Errorf("interval %v (series %v), want 32s after five thinnings", p.every, p.s.Interval)
	}
	for i := 1; i < len(p.s.Points); i++ {
		if p.s.Points[i].T <= p.s.Points[i-1].T {
			t.Fatalf("points out of order at %d", i)
		}
	}
}
