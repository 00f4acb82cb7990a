package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// mermaidHorizontalAbove is the server count from which bar charts are drawn
// horizontally: names then stack on the y axis instead of overlapping.
const mermaidHorizontalAbove = 6

// Mermaid writes the charts of a Markdown summary as Mermaid `xychart-beta`
// blocks, which GitHub renders natively (no image file): for every echo and
// rate phase, the servers' TPS as bars (echo: tps; rate: recv_rate, echoes
// received per second); then, folded in a <details> block, each rate
// phase's per-second timeline of echoes received, one chart per server (an
// xychart has no legend), all on the same y axis. A server whose result
// failed shows 0 and is named under the chart. A run without such phases
// writes nothing.
func Mermaid(w io.Writer, run *result.Run) error {
	ew := &errWriter{w: w}
	for _, ph := range run.Phases() {
		kind := run.Results[indexOfPhase(run, ph)].Kind
		k, ok := scenarios.Lookup(kind)
		if !ok || !k.Throughput.Messages {
			continue
		}
		rm := struct{ name, unit string }{k.Throughput.Metric, k.Throughput.Unit}
		var names []string
		var vals []float64
		var failed []string
		for _, r := range run.Results {
			if r.Phase != ph {
				continue
			}
			names = append(names, serverLabel(&r))
			v := r.Metrics.Float(rm.name)
			if !r.OK {
				v = 0
				failed = append(failed, serverLabel(&r))
			}
			vals = append(vals, v)
		}
		orient := ""
		if len(names) > mermaidHorizontalAbove {
			orient = " horizontal"
		}
		ew.printf("```mermaid\nxychart-beta%s\n    title %s\n    x-axis [%s]\n    y-axis %s 0 --> %s\n    bar [%s]\n```\n\n",
			orient, mermaidString(ph+": "+rm.unit+" ("+rm.name+")"), mermaidList(names), mermaidString(rm.unit),
			mermaidNumber(niceCeil(maxOf(vals))), mermaidNumbers(vals))
		if len(failed) > 0 {
			ew.printf("Failed, shown as 0: %s.\n\n", strings.Join(failed, ", "))
		}
	}

	var timelines []*result.Result
	for i, r := range run.Results {
		if len(r.Timeline) > 0 {
			timelines = append(timelines, &run.Results[i])
		}
	}
	if len(timelines) > 0 {
		// One y axis for every server's chart of a phase, so the charts
		// compare (an echo phase's rate would flatten a rate phase's).
		top := map[string]float64{}
		for _, r := range timelines {
			for _, p := range r.Timeline {
				top[r.Phase] = math.Max(top[r.Phase], float64(p.Recv))
			}
		}
		ew.printf("<details><summary>Per-second timelines: echoes received per second</summary>\n\n")
		for _, r := range timelines {
			xs := make([]string, len(r.Timeline))
			ys := make([]float64, len(r.Timeline))
			for i, p := range r.Timeline {
				xs[i] = strconv.Itoa(p.T)
				ys[i] = float64(p.Recv)
			}
			var p99 float64
			for _, p := range r.Timeline {
				p99 = math.Max(p99, ms(p.P99))
			}
			ew.printf("```mermaid\nxychart-beta\n    title %s\n    x-axis %s [%s]\n    y-axis %s 0 --> %s\n    line [%s]\n```\n\n",
				mermaidString(fmt.Sprintf("%s, %s: echoes received per second (worst second's p99: %s ms)", r.Phase, serverLabel(r), mermaidNumber(p99))),
				mermaidString("second"), mermaidList(xs), mermaidString("echoes/s"),
				mermaidNumber(niceCeil(top[r.Phase])), mermaidNumbers(ys))
		}
		ew.printf("</details>\n\n")
	}
	return ew.err
}

// mermaidString quotes a label; Mermaid strings cannot hold a double quote.
func mermaidString(s string) string {
	return `"` + strings.ReplaceAll(strings.Join(strings.Fields(s), " "), `"`, "'") + `"`
}

func mermaidList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = mermaidString(n)
	}
	return strings.Join(q, ", ")
}

// mermaidNumber prints a value with at most two decimals, no exponent.
func mermaidNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

func mermaidNumbers(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = mermaidNumber(v)
	}
	return strings.Join(s, ", ")
}

func maxOf(vs []float64) float64 {
	m := 0.0
	for _, v := range vs {
		if v > m && !math.IsInf(v, 0) {
			m = v
		}
	}
	return m
}

// niceCeil rounds up to 1, 2, 2.5 or 5 times a power of ten (1 for 0), the
// top of a y axis.
func niceCeil(m float64) float64 {
	if !(m > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(m)))
	for _, s := range []float64{1, 2, 2.5, 5, 10} {
		if s*p >= m {
			return s * p
		}
	}
	return 10 * p
}
