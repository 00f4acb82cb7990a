package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// soakTable writes, under a phase's table, how the server's and the
// client's resources moved over each result that carries a soak series
// (result.Soak): first and last reading after the settle time, the fitted
// slopes, memory after the drain, and the leak verdict. A slope per hour
// fitted over less than metrics.SoakMinHourSpan (one per unit of work:
// metrics.SoakMinUnitSpan) shows as "-", and a line under the table says
// so: multiplied up to an hour, seconds of a warm-up read as a leak. The
// JSON keeps every slope.
func soakTable(ew *errWriter, format, phase string, names []string, results []*result.Result) error {
	var rows [][]string
	var settle time.Duration
	var spec scenarios.Soak
	var hourShort, unitShort []time.Duration // the spans of the fits too short to show
	for _, res := range results {
		if res.Soak == nil || len(res.Soak.Points) == 0 {
			continue
		}
		if k, ok := scenarios.Lookup(res.Kind); ok && k.Soak != nil {
			spec = *k.Soak
		}
		settle = max(settle, res.Soak.Settle)
		// Without a fit (no soak_span) there is no slope to leave out.
		_, fitted := res.Metrics[metrics.SoakSpan]
		span := res.Metrics.Dur(metrics.SoakSpan)
		fit := soakSpans{hours: !fitted || span >= metrics.SoakMinHourSpan, units: !fitted || span >= metrics.SoakMinUnitSpan}
		if !fit.hours {
			hourShort = append(hourShort, span)
		}
		if !fit.units && spec.RSSPer != "" {
			unitShort = append(unitShort, span)
		}
		rows = append(rows, append(varCells(names, res), soakRow(res, spec, fit)...))
	}
	if len(rows) == 0 {
		return nil
	}
	header := append(append([]string{}, names...), "Framework", "Fitted", "Srv RSS", "RSS/h", "Srv FDs", "FDs/h", "Threads", "Threads/h")
	if spec.RSSPer != "" {
		header = append(header, fmt.Sprintf("RSS/%s %s", shortCount(spec.Per), spec.Unit))
	}
	header = append(header, "After drain", "Leak", "Cli RSS", "Cli RSS/h", "Goroutines/h")
	if err := titledTable(ew, format, fmt.Sprintf("[Soak] %s: resources over the phase (fitted after the first %s)", phase, Duration(settle)), header, rows); err != nil {
		return err
	}
	var notes []string
	if len(hourShort) > 0 {
		notes = append(notes, shortFitNote("slopes per hour", metrics.SoakMinHourSpan, hourShort))
	}
	if len(unitShort) > 0 {
		notes = append(notes, shortFitNote(fmt.Sprintf("slopes per %s %s", shortCount(spec.Per), spec.Unit), metrics.SoakMinUnitSpan, unitShort))
	}
	if len(notes) > 0 {
		ew.printf("%s\n\n", strings.Join(notes, "\n"))
	}
	return ew.err
}

// soakSpans says which slopes a result's fit is long enough to show: per
// hour (metrics.SoakMinHourSpan), per unit of work
// (metrics.SoakMinUnitSpan).
type soakSpans struct{ hours, units bool }

// soakRow is one result's row of the [Soak] table, after its matrix
// values: the slopes its fit is too short for (fit) read "-".
func soakRow(res *result.Result, spec scenarios.Soak, fit soakSpans) []string {
	first, last := soakEnds(res.Soak)
	m := res.Metrics
	perHour := func(name string, f func(float64) string) string {
		if !fit.hours {
			return "-"
		}
		return slope(m, name, f)
	}
	row := []string{res.Server, slope(m, metrics.SoakSpan, func(float64) string { return Duration(m.Dur(metrics.SoakSpan)) })}
	if res.NoServerResources() {
		row = append(row, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a")
	} else {
		row = append(row,
			MiB(first.RSS)+" → "+MiB(last.RSS), perHour(metrics.RSSSlope, signedMiB),
			fmt.Sprintf("%d → %d", first.FDs, last.FDs), perHour(metrics.FDsSlope, signed),
			fmt.Sprintf("%d → %d", first.Threads, last.Threads), perHour(metrics.ThreadsSlope, signed))
	}
	if spec.RSSPer != "" {
		perUnit := "-"
		if fit.units {
			perUnit = slope(m, spec.RSSPer, signedMiB)
		}
		row = append(row, perUnit)
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
	return append(row, after, leak, MiB(first.ClientRSS)+" → "+MiB(last.ClientRSS),
		perHour(metrics.ClientRSSSlope, signedMiB), perHour(metrics.GoroutinesSlope, signed))
}

// shortFitNote is the line under a [Soak] table whose slopes of a kind
// (what) were left out: the span they need, the spans they had.
func shortFitNote(what string, need time.Duration, spans []time.Duration) string {
	lo, hi := slices.Min(spans), slices.Max(spans)
	had := Duration(lo)
	if hi != lo {
		had += "–" + Duration(hi)
	}
	return fmt.Sprintf("%s need a fit of at least %s; these were fitted over %s: first and last readings shown", what, roundDuration(need), had)
}

// roundDuration writes a whole minimum as people say it: 5m, 30s.
func roundDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
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
