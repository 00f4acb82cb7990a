package result

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
)

// SameVars reports whether two matrix combinations are equal (nil and
// empty are the same: no matrix).
func SameVars(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// VarsString writes a combination as "payload=64 conns=1000", the vars in
// the order of names (the plan's matrix order) and then any other, sorted;
// "" for none.
func VarsString(vars map[string]string, names []string) string {
	var parts []string
	seen := map[string]bool{}
	for _, n := range names {
		if v, ok := vars[n]; ok {
			parts = append(parts, n+"="+v)
			seen[n] = true
		}
	}
	var rest []string
	for n := range vars {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	for _, n := range rest {
		parts = append(parts, n+"="+vars[n])
	}
	return strings.Join(parts, " ")
}

// MatrixNames returns the matrix var names of a run: the plan's order
// when it recorded one, else every var the results carry, sorted.
func (r *Run) MatrixNames() []string {
	if len(r.Plan.Matrix) > 0 {
		out := make([]string, len(r.Plan.Matrix))
		for i, m := range r.Plan.Matrix {
			out[i] = m.Name
		}
		return out
	}
	seen := map[string]bool{}
	var out []string
	for _, x := range r.Results {
		for n := range x.Vars {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// HasRepeats reports whether any result of the run is one of several
// repeats.
func (r *Run) HasRepeats() bool {
	for _, x := range r.Results {
		if x.Repeat > 1 || x.N > 1 {
			return true
		}
	}
	return false
}

// Collapse returns the run with one result per (combination, server,
// phase): the median of its repeats. A run without repeats comes back as
// it is (the same pointer). In a median result:
//
//   - each metric is the median over the repeats that succeeded (over all
//     of them when none did), keeping its Go type (counts round to the
//     nearest integer); a Bool is true when it was in any repeat;
//   - N is the number of repeats, Repeats their metrics in repeat order,
//     Spread each numeric metric's relative spread (the farthest repeat
//     from the median, over the median);
//   - OK is true only when every repeat succeeded; Error and Warnings
//     carry every repeat's, prefixed "repeat k: ";
//   - Timeline, Histogram, ServerLog and ClientShards are those of the repeat nearest the median
//     of the phase's throughput (tps, else recv_rate), the one a chart
//     should show.
//
// Assertions are left as they are: evaluate them on the collapsed run.
func Collapse(run *Run) *Run {
	if run == nil || !run.HasRepeats() {
		return run
	}
	for _, x := range run.Results {
		if x.N > 0 {
			return run // already collapsed
		}
	}
	out := *run
	out.Results = nil
	type key struct{ vars, server, phase string }
	index := map[key]int{}
	var groups [][]*Result
	for i := range run.Results {
		x := &run.Results[i]
		k := key{VarsString(x.Vars, nil), x.Server, x.Phase}
		j, ok := index[k]
		if !ok {
			j = len(groups)
			index[k] = j
			groups = append(groups, nil)
		}
		groups[j] = append(groups[j], x)
	}
	for _, g := range groups {
		out.Results = append(out.Results, median(g))
	}
	return &out
}

// foldMetric sets metric n of m to its median over the repeats (true if
// any repeat's is, for flags), keeping the metric's type, and its spread
// when m keeps spreads.
func (m *Result) foldMetric(n string, from []*Result) {
	var xs []float64
	var proto any
	anyTrue := false
	for _, x := range from {
		v, has := x.Metrics[n]
		if !has {
			continue
		}
		proto = v
		if b, isBool := v.(bool); isBool {
			anyTrue = anyTrue || b
			continue
		}
		xs = append(xs, x.Metrics.Float(n))
	}
	switch proto.(type) {
	case bool:
		m.Metrics[n] = anyTrue
		return
	case nil:
		return
	}
	med := Median(xs)
	switch proto.(type) {
	case int64, int:
		m.Metrics[n] = int64(math.Round(med))
	case time.Duration:
		m.Metrics[n] = time.Duration(math.Round(med))
	default:
		m.Metrics[n] = med
	}
	if m.Spread != nil && len(xs) > 1 {
		m.Spread[n] = Spread(xs, med)
	}
}

// median folds the repeats of one (combination, server, phase).
func median(g []*Result) Result {
	first := g[0]
	m := Result{Server: first.Server, Framework: first.Framework, Phase: first.Phase, Kind: first.Kind, Throughput: first.Throughput,
		OK: true, Vars: first.Vars, N: len(g), Metrics: metrics.Values{}, Spread: map[string]float64{},
		ServerResources: first.ServerResources, Info: first.Info}
	var ok []*Result
	var errs []string
	for _, x := range g {
		m.Repeats = append(m.Repeats, x.Metrics)
		if x.OK {
			ok = append(ok, x)
		} else {
			m.OK = false
			errs = append(errs, fmt.Sprintf("repeat %d: %s", x.Repeat, x.Error))
		}
		for _, w := range x.Warnings {
			m.Warnings = append(m.Warnings, fmt.Sprintf("repeat %d: %s", x.Repeat, w))
		}
	}
	if len(g) == 1 {
		m.N = 0
		m.Spread = nil
		m.Warnings = first.Warnings
	}
	m.Error = strings.Join(errs, "; ")
	from := ok
	if len(from) == 0 {
		from = g
	}
	names := map[string]bool{}
	for _, x := range from {
		for n := range x.Metrics {
			names[n] = true
		}
	}
	for n := range names {
		m.foldMetric(n, from)
	}
	// The repeat nearest the median throughput gives the timeline (the
	// first repeat's when the results name no throughput).
	best := from[0]
	if rate := first.Throughput; rate != "" {
		dist := math.Inf(1)
		for _, x := range from {
			if d := math.Abs(x.Metrics.Float(rate) - m.Metrics.Float(rate)); d < dist {
				best, dist = x, d
			}
		}
	}
	m.Timeline, m.Histogram, m.ServerLog, m.ClientShards = best.Timeline, best.Histogram, best.ServerLog, best.ClientShards
	if len(g) == 1 {
		m.Error, m.ServerLog = first.Error, first.ServerLog
	}
	return m
}

// Median is the median of xs (the mean of the middle two for an even
// count); 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Spread is the farthest of xs from med, relative to med: 0.03 when every
// value is within ±3% of the median. 0 when med is 0.
func Spread(xs []float64, med float64) float64 {
	if med == 0 {
		return 0
	}
	worst := 0.0
	for _, x := range xs {
		worst = max(worst, math.Abs(x/med-1))
	}
	return worst
}
