package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// soakSeries is ten readings every step, RSS growing by grow a reading,
// then one after the drain.
func soakSeries(step time.Duration, rss0, grow int64) *result.Soak {
	s := &result.Soak{Interval: step, Settle: 2 * step}
	for i := range 10 {
		s.Points = append(s.Points, result.SoakPoint{T: time.Duration(i) * step, RSS: rss0 + int64(i)*grow, FDs: 1010, Threads: 7,
			ClientRSS: 30*mib + int64(i)*mib/10, Goroutines: 12})
	}
	s.Points = append(s.Points, result.SoakPoint{T: 12 * step, RSS: rss0, Drain: true})
	return s
}

// soakValues are a fit's metrics over span; leak only over a fit long
// enough to judge per hour, as the engine writes it.
func soakValues(span time.Duration, leak bool, slope float64) metrics.Values {
	m := metrics.Values{metrics.RSSSlope: slope, metrics.FDsSlope: 0.0, metrics.ThreadsSlope: 0.0,
		metrics.RSSAfterDrain: int64(40 * mib), metrics.ClientRSSSlope: 1.5 * mib, metrics.GoroutinesSlope: -2.0,
		metrics.SoakSpan: span, "duration": 10 * time.Second}
	if span >= metrics.SoakMinHourSpan {
		m[metrics.Leak] = leak
	}
	return m
}

func soakTables(t *testing.T, results ...result.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := Tables(&b, &result.Run{Results: results}, nil, "md"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// wantIn fails the test for each of wants that out lacks.
func wantIn(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestSoakTable: a phase whose results carry a soak series gets the
// [Soak] table under its own: first and last reading after the settle
// time (the server's and the client's), the slopes, memory after the
// drain and the verdict; a server not measured reads n/a; the slopes are
// not repeated in the phase's table. These fits span 7 minutes: long
// enough for slopes per hour, so no note.
func TestSoakTable(t *testing.T) {
	const span = 7 * time.Minute
	out := soakTables(t,
		result.Result{Server: "leaky", Phase: "hold", Kind: "hold", OK: true, Metrics: soakValues(span, true, 3600*mib), Soak: soakSeries(time.Minute, 40*mib, mib)},
		result.Result{Server: "steady", Phase: "hold", Kind: "hold", OK: true, Metrics: soakValues(span, false, 0), Soak: soakSeries(time.Minute, 40*mib, 0)},
		result.Result{Server: "blind", Phase: "hold", Kind: "hold", OK: true, Metrics: metrics.Values{metrics.ClientRSSSlope: 0.0, metrics.SoakSpan: span},
			Soak: soakSeries(time.Minute, 0, 0), ServerResources: result.ResourcesNone},
	)
	wantIn(t, out,
		"[Soak] hold: resources over the phase (fitted after the first 2m0.00s)",
		"| Framework | Fitted  | Srv RSS         | RSS/h     | Srv FDs     | FDs/h | Threads | Threads/h | After drain | Leak  | Cli RSS         | Cli RSS/h | Goroutines/h |",
		"| leaky     | 7m0.00s | 42.00M → 49.00M | +3600.00M | 1010 → 1010 | +0.0  | 7 → 7   | +0.0      | 40.00M      | LEAK? | 30.20M → 30.90M | +1.50M    | -2.0         |",
		"| steady    | 7m0.00s | 40.00M → 40.00M | +0.00M    |",
		"| blind     | 7m0.00s | n/a             | n/a       | n/a         | n/a   | n/a     | n/a       | -           | -     | 30.20M → 30.90M | +0.00M    | -            |",
	)
	if strings.Contains(out, "need a fit") {
		t.Errorf("a note on short fits under long ones:\n%s", out)
	}
	if hold := out[:strings.Index(out, "[Soak]")]; strings.Contains(hold, metrics.RSSSlope) {
		t.Errorf("the hold table repeats the soak metrics:\n%s", hold)
	}
}

// TestSoakTableShortFit: slopes per hour fitted over seconds (a 10 s rate
// phase fitted over 7.5 s of a warming server) read "-", with the first
// and last readings and a line saying why.
func TestSoakTableShortFit(t *testing.T) {
	out := soakTables(t,
		result.Result{Server: "fasthttp", Phase: "rate", Kind: "rate", OK: true, Metrics: soakValues(7510*time.Millisecond, false, 4725*mib), Soak: soakSeries(time.Second, 322*mib, mib)},
		result.Result{Server: "gobwas", Phase: "rate", Kind: "rate", OK: true, Metrics: soakValues(8510*time.Millisecond, false, 3020*mib), Soak: soakSeries(time.Second, 410*mib, mib)},
	)
	wantIn(t, out,
		"| fasthttp  | 7.51s  | 324.00M → 331.00M | -     | 1010 → 1010 | -     | 7 → 7   | -         | 40.00M      | -    | 30.20M → 30.90M | -         | -            |",
		"| gobwas    | 8.51s  | 412.00M → 419.00M | -     |",
		"\n\nslopes per hour need a fit of at least 5m; these were fitted over 7.51s–8.51s: first and last readings shown\n\n",
	)
	if strings.Contains(out, "+4725") || strings.Contains(out, "+1.50M") {
		t.Errorf("a slope per hour of a short fit shown:\n%s", out)
	}
	// Only the short one's slopes are left out, and the note names its span.
	out = soakTables(t,
		result.Result{Server: "long", Phase: "rate", Kind: "rate", OK: true, Metrics: soakValues(6*time.Minute, false, 2*mib), Soak: soakSeries(time.Minute, 40*mib, 0)},
		result.Result{Server: "short", Phase: "rate", Kind: "rate", OK: true, Metrics: soakValues(90*time.Second, false, 2*mib), Soak: soakSeries(10*time.Second, 40*mib, 0)},
	)
	wantIn(t, out,
		"| long      | 6m0.00s  | 40.00M → 40.00M | +2.00M | 1010 → 1010 | +0.0  | 7 → 7   | +0.0      | 40.00M      | no   | 30.20M → 30.90M | +1.50M    | -2.0         |",
		"| short     | 1m30.00s | 40.00M → 40.00M | -      | 1010 → 1010 | -     | 7 → 7   | -         | 40.00M      | -    | 30.20M → 30.90M | -         | -            |",
		"slopes per hour need a fit of at least 5m; these were fitted over 1m30.00s: first and last readings shown",
	)
}

// TestSoakTableChurnSpans: churn's slope per 100k cycles has its own
// minimum (metrics.SoakMinUnitSpan, 30 s): over 40 s it is shown while the
// slopes per hour are not; over 20 s neither is, and both notes say so.
func TestSoakTableChurnSpans(t *testing.T) {
	k, _ := scenarios.Lookup("churn")
	if k.Soak == nil || k.Soak.RSSPer == "" {
		t.Fatal("churn declares no slope per unit")
	}
	churn := func(server string, span time.Duration) result.Result {
		m := soakValues(span, false, 900*mib)
		m[k.Soak.RSSPer] = 300.0 * mib
		if span >= metrics.SoakMinUnitSpan { // churn's verdict is per 100k cycles
			m[metrics.Leak] = false
		}
		return result.Result{Server: server, Phase: "churn", Kind: "churn", OK: true, Metrics: m, Soak: soakSeries(5*time.Second, 40*mib, 0)}
	}
	out := soakTables(t, churn("gws", 40*time.Second))
	wantIn(t, out,
		"| Framework | Fitted | Srv RSS         | RSS/h | Srv FDs     | FDs/h | Threads | Threads/h | RSS/100k cycles |",
		"| gws       | 40.00s | 40.00M → 40.00M | -     | 1010 → 1010 | -     | 7 → 7   | -         | +300.00M        | 40.00M      | no   |",
		"slopes per hour need a fit of at least 5m; these were fitted over 40.00s: first and last readings shown",
	)
	if strings.Contains(out, "per 100k cycles need") {
		t.Errorf("a 40 s fit noted as too short per 100k cycles:\n%s", out)
	}
	out = soakTables(t, churn("gws", 20*time.Second))
	wantIn(t, out,
		"| gws       | 20.00s | 40.00M → 40.00M | -     | 1010 → 1010 | -     | 7 → 7   | -         | -               |",
		"slopes per hour need a fit of at least 5m; these were fitted over 20.00s: first and last readings shown\nslopes per 100k cycles need a fit of at least 30s; these were fitted over 20.00s: first and last readings shown",
	)
}
