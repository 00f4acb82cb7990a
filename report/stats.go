package report

import (
	"fmt"
	"math"

	"golang.org/x/perf/benchmath"

	"github.com/wsplan/wsplan/internal/result"
)

// Repeats and significance.
//
// A run with repeats (--count N) is shown as the median of its repeats
// (result.Collapse); each measured figure is followed by its spread, " ±3%":
// the farthest repeat from the median, relative to it (the whole range, so
// it is defined from 2 repeats on, where benchstat's 95% interval needs 6).
// Against a baseline that has repeats too, the change is tested as
// benchstat tests it, with golang.org/x/perf/benchmath (Mann-Whitney U, no
// distribution assumed, alpha 0.05): " (+5.1% p=0.008)" when significant,
// " (~ p=0.421)" when the samples may well come from one distribution.

// RepeatsNote is printed under a table of medians.
const RepeatsNote = "medians of the repeats; ±x%: the farthest repeat from the median, relative to it (none: the same in every repeat)"

// SignificanceNote explains the p-values of a comparison of repeats.
const SignificanceNote = "with repeats on both sides, p is the Mann-Whitney U test's (as benchstat's) and ~ means no significant difference (p ≥ 0.05; 4 repeats a side are needed to ever show one)"

// Alpha is the significance level of comparisons.
const Alpha = 0.05

// spread is a median cell's " ±x%", "" for a result of one repeat.
func spread(r *result.Result, name string) string {
	if r.N < 2 || r.Spread == nil {
		return ""
	}
	sp, ok := r.Spread[name]
	if !ok || math.IsNaN(sp) || sp < 0.005 {
		return "" // equal in every repeat (to the shown precision)
	}
	return fmt.Sprintf(" ±%.0f%%", 100*sp)
}

// Significance compares the repeats of one metric in two results (each a
// median result with at least two repeats): the p-value of the
// Mann-Whitney U test and whether the change is significant at Alpha. ok
// is false when either side has fewer than two repeats.
func Significance(cur, base *result.Result, name string) (p float64, significant, ok bool) {
	if cur == nil || base == nil || len(cur.Repeats) < 2 || len(base.Repeats) < 2 {
		return 0, false, false
	}
	xs, ys := sample(base, name), sample(cur, name)
	if len(xs) < 2 || len(ys) < 2 {
		return 0, false, false
	}
	th := benchmath.DefaultThresholds
	th.CompareAlpha = Alpha
	c := benchmath.AssumeNothing.Compare(benchmath.NewSample(xs, &th), benchmath.NewSample(ys, &th))
	return c.P, c.P <= c.Alpha, true
}

// sample is one metric over a median result's repeats.
func sample(r *result.Result, name string) []float64 {
	var xs []float64
	for _, m := range r.Repeats {
		if _, ok := m[name]; ok {
			xs = append(xs, m.Float(name))
		}
	}
	return xs
}

// change is a cell's change against the baseline: " (+3.2%)", or with
// repeats on both sides " (+3.2% p=0.008)" / " (~ p=0.421)".
func change(cur, base *result.Result, name string) string {
	d := delta(cur.Metrics.Float(name), base.Metrics.Float(name))
	p, sig, ok := Significance(cur, base, name)
	if !ok {
		return d
	}
	if !sig {
		return fmt.Sprintf(" (~ p=%.3f)", p)
	}
	if d == "" {
		return fmt.Sprintf(" (p=%.3f)", p)
	}
	return fmt.Sprintf("%s p=%.3f)", d[:len(d)-1], p)
}

// varCols are the matrix var columns of a table.
func varCols(names []string) []column {
	cols := make([]column, len(names))
	for i, n := range names {
		cols[i] = column{n, func(r row) string {
			if v, ok := r.res.Vars[n]; ok {
				return v
			}
			return "-"
		}}
	}
	return cols
}

// varsPrefix names a result's combination in a note: "payload=64 ".
func varsPrefix(r *result.Result) string {
	if len(r.Vars) == 0 {
		return ""
	}
	return "[" + result.VarsString(r.Vars, nil) + "] "
}

// serverLabel names a result in a chart: its server, and its matrix
// combination when it has one ("gws payload=64").
func serverLabel(r *result.Result) string {
	if len(r.Vars) == 0 {
		return r.Server
	}
	return r.Server + " " + result.VarsString(r.Vars, nil)
}
