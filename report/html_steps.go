package report

import (
	"slices"

	"github.com/wsplan/wsplan/internal/result"
)

// chartSteps is a search's steps: x is the target rate (msg/s, XLabel),
// a line per (server, run) through its steps in order of target, and a
// series of points only (PointsOnly) marking the steps whose verdict was
// not "pass".
const chartSteps = "steps"

// steps are the charts of results that measured steps (a search): what
// each step achieved against its target, and its p99 (failed results too:
// their steps are real).
func (p *phaseCharts) steps() []chart {
	var out []chart
	for _, st := range []struct {
		what, title, unit string
		f                 func(s result.Step) float64
	}{
		{"achieved", "Search steps: achieved vs target rate", "msg/s", func(s result.Step) float64 { return s.Achieved }},
		{"p99", "Search steps: p99 latency by target rate", "ms", func(s result.Step) float64 { return ms(s.P99) }},
	} {
		c := chart{ID: p.id("steps-" + st.what), Type: chartSteps, Title: st.title, Unit: st.unit, XLabel: "target msg/s",
			Note: "a line per server through its steps by target rate; marked points: steps that failed the SLO or were client-bound"}
		for j, srv := range p.servers {
			for i, run := range p.runs {
				r := p.find(run, srv)
				if r == nil || len(r.Steps) == 0 {
					continue
				}
				steps := slices.Clone(r.Steps)
				slices.SortStableFunc(steps, func(a, b result.Step) int {
					switch {
					case a.Target < b.Target:
						return -1
					case a.Target > b.Target:
						return 1
					}
					return 0
				})
				line := p.series(srv, j, i)
				line.Color = &j // the marks take the line's colour
				bad := line
				bad.Name += ": not passed"
				bad.PointsOnly = true
				for _, s := range steps {
					pt := [2]float64{s.Target, st.f(s)}
					line.Points = append(line.Points, pt)
					if s.Verdict != "pass" {
						bad.Points = append(bad.Points, pt)
					}
				}
				c.Series = append(c.Series, line)
				if len(bad.Points) > 0 {
					c.Series = append(c.Series, bad)
				}
			}
		}
		if len(c.Series) > 0 {
			out = append(out, c)
		}
	}
	return out
}
