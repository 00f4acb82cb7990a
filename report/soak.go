package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// soakTable writes, under a phase's table, how the server's and the
// client's resources moved over each result that carries a soak series
// (result.Soak): first and last reading after the settle time, the fitted
// slopes, memory after the drain, and the leak verdict.
func soakTable(ew *errWriter, format, phase string, names []string, results []*result.Result) error {
	var rows [][]string
	var settle time.Duration
	var spec scenarios.Soak
	for _, res := range results {
		if res.Soak == nil || len(res.Soak.Points) == 0 {
			continue
		}
		if k, ok := scenarios.Lookup(res.Kind); ok && k.Soak != nil {
			spec = *k.Soak
		}
		settle = max(settle, res.Soak.Settle)
		first, last := soakEnds(res.Soak)
		m := res.Metrics
		row := append(varCells(names, res), res.Server, slope(m, metrics.SoakSpan, func(float64) string { return Duration(m.Dur(metrics.SoakSpan)) }))
		if res.NoServerResources() {
			row = append(row, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a")
		} else {
			row = append(row,
				MiB(first.RSS)+" → "+MiB(last.RSS), slope(m, metrics.RSSSlope, signedMiB),
				fmt.Sprintf("%d → %d", first.FDs, last.FDs), slope(m, metrics.FDsSlope, signed),
				fmt.Sprintf("%d → %d", first.Threads, last.Threads), slope(m, metrics.ThreadsSlope, signed))
		}
		if spec.RSSPer != "" {
			row = append(row, slope(m, spec.RSSPer, signedMiB))
		}
		after := "-"
		if _, ok := m[metrics.RSSAfterDrain]; ok {
			after = MiB(m.Int(metrics.RSSAfterDrain))
		}
		leak := "-"
		if _, ok := m[metrics.Leak]; ok {
			leak = "no"
			if m.Bool(metrics.Leak) {
				leak = "LEAK?"
			}
		}
		row = append(row, after, leak, slope(m, metrics.ClientRSSSlope, signedMiB), slope(m, metrics.GoroutinesSlope, signed))
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil
	}
	header := append(append([]string{}, names...), "Framework", "Fitted", "Srv RSS", "RSS/h", "Srv FDs", "FDs/h", "Threads", "Threads/h")
	if spec.RSSPer != "" {
		header = append(header, fmt.Sprintf("RSS/%s %s", shortCount(spec.Per), spec.Unit))
	}
	header = append(header, "After drain", "Leak", "Cli RSS/h", "Goroutines/h")
	return titledTable(ew, format, fmt.Sprintf("[Soak] %s: resources over the phase (fitted after the first %s)", phase, Duration(settle)), header, rows)
}

// soakEnds returns the first reading after the settle time and the last
// one before the drain.
func soakEnds(s *result.Soak) (first, last result.SoakPoint) {
	found := false
	for _, pt := range s.Points {
		if pt.Drain {
			continue
		}
		if !found && pt.T >= s.Settle {
			first, found = pt, true
		}
		last = pt
	}
	return first, last
}

func signedMiB(v float64) string { return fmt.Sprintf("%+.2fM", v/(1<<20)) }
func signed(v float64) string    { return fmt.Sprintf("%+.1f", v) }

// slope shows a fitted figure, "-" when it was not fitted.
func slope(m metrics.Values, name string, f func(float64) string) string {
	if _, ok := m[name]; !ok {
		return "-"
	}
	return f(m.Float(name))
}

// shortCount writes 100000 as 100k.
func shortCount(n int64) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return fmt.Sprintf("%dM", n/1000000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strings.TrimSpace(fmt.Sprint(n))
}
