package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// TestSoakTable: a phase whose results carry a soak series gets the
// [Soak] table under its own: first and last reading after the settle
// time, the slopes, memory after the drain and the verdict; a server not
// measured reads n/a; the slopes are not repeated in the phase's table.
func TestSoakTable(t *testing.T) {
	pts := func(rss0, step int64) *result.Soak {
		s := &result.Soak{Interval: time.Second, Settle: 2 * time.Second}
		for i := range 10 {
			s.Points = append(s.Points, result.SoakPoint{T: time.Duration(i) * time.Second, RSS: rss0 + int64(i)*step, FDs: 1010, Threads: 7, ClientRSS: 30 * mib})
		}
		s.Points = append(s.Points, result.SoakPoint{T: 12 * time.Second, RSS: rss0, Drain: true})
		return s
	}
	soakM := func(leak bool, slope float64) metrics.Values {
		return metrics.Values{metrics.RSSSlope: slope, metrics.FDsSlope: 0.0, metrics.ThreadsSlope: 0.0, metrics.Leak: leak,
			metrics.RSSAfterDrain: int64(40 * mib), metrics.ClientRSSSlope: 1.5 * mib, metrics.GoroutinesSlope: -2.0,
			metrics.SoakSpan: 7 * time.Second, "duration": 10 * time.Second}
	}
	run := &result.Run{Results: []result.Result{
		{Server: "leaky", Phase: "hold", Kind: "hold", OK: true, Metrics: soakM(true, 3600*mib), Soak: pts(40*mib, mib)},
		{Server: "steady", Phase: "hold", Kind: "hold", OK: true, Metrics: soakM(false, 0), Soak: pts(40*mib, 0)},
		{Server: "blind", Phase: "hold", Kind: "hold", OK: true, Metrics: metrics.Values{metrics.ClientRSSSlope: 0.0}, Soak: pts(0, 0), ServerResources: result.ResourcesNone},
	}}
	var b bytes.Buffer
	if err := Tables(&b, run, nil, "md"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"[Soak] hold: resources over the phase (fitted after the first 2.00s)",
		"| leaky     | 7.00s  | 42.00M → 49.00M | +3600.00M | 1010 → 1010 | +0.0  | 7 → 7   | +0.0      | 40.00M      | LEAK? | +1.50M    | -2.0         |",
		"| steady    | 7.00s  | 40.00M → 40.00M | +0.00M    |",
		"| blind     | -      | n/a             | n/a       | n/a         | n/a   | n/a     | n/a       | -           | -     | +0.00M    | -            |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if hold := out[:strings.Index(out, "[Soak]")]; strings.Contains(hold, metrics.RSSSlope) {
		t.Errorf("the hold table repeats the soak metrics:\n%s", hold)
	}
}
