package report

import (
	"encoding/base64"
	"fmt"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// The chart types the page's script draws.
const (
	chartBars        = "bars"        // one group of bars per category (server), one bar per series
	chartPercentiles = "percentiles" // latency by percentile on a log "nines" axis
	chartTimeline    = "timeline"    // a value per second of a phase
	chartByVar       = "byvar"       // a value by the values of a matrix var (Categories), a line per server
)

// chart is one chart of the HTML page, computed here so the script only
// draws: what to show is a pure function of the runs, tested in Go.
type chart struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Title string `json:"title"`
	Unit  string `json:"unit"` // of the values: "echoes/s", "ms", "KiB"
	Note  string `json:"note,omitempty"`
	// Categories are the bar groups (servers), for bars; the values of the
	// matrix var (the x axis, points at their index), for byvar.
	Categories []string `json:"categories,omitempty"`
	// XLabel names the x axis of a byvar chart: the matrix var.
	XLabel string        `json:"xlabel,omitempty"`
	Series []chartSeries `json:"series"`
}

// chartSeries is one series: Values for bars (one per category, null where
// the result lacks it), Points for percentiles ((percentile, value)) and
// timelines ((second, value)).
//
// Color and Dash pick the line's look where a series is one (server, run):
// the colour follows the server and the dash the run, so one server's runs
// read as one colour; nil = by series index, solid.
type chartSeries struct {
	Name   string       `json:"name"`
	Values []*float64   `json:"values,omitempty"`
	Points [][2]float64 `json:"points,omitempty"`
	Color  *int         `json:"color,omitempty"`
	Dash   *int         `json:"dash,omitempty"`
	// PointsOnly draws the series' points without a line (a steps chart's
	// steps that did not pass).
	PointsOnly bool `json:"points_only,omitempty"`
}

// chartSection is the charts of one phase.
type chartSection struct {
	Phase  string  `json:"phase"`
	Kind   string  `json:"kind"`
	Title  string  `json:"title"`
	Charts []chart `json:"charts"`
}

// headline is the figure a phase's throughput shows: the Throughput its
// kind declares, else (a kind this build does not know) the one its
// results recorded; "" = none.
func headline(kind string, rs []*result.Result) (name, unit string) {
	if k, ok := scenarios.Lookup(kind); ok {
		return k.Throughput.Metric, k.Throughput.Unit
	}
	for _, r := range rs {
		if r.Throughput != "" {
			return r.Throughput, "per second"
		}
	}
	return "", ""
}

// headline is the phase's headline figure over every run.
func (p *phaseCharts) headline() (name, unit string) {
	var rs []*result.Result
	for _, run := range p.runs {
		for i := range run.Results {
			if run.Results[i].Phase == p.phase {
				rs = append(rs, &run.Results[i])
			}
		}
	}
	return headline(p.kind, rs)
}

// spectrumPoints are the percentiles the latency spectrum shows from a
// result's stored histogram (result.Result.Histogram): up to 99.999%.
var spectrumPoints = []float64{50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999}

// histogramPoints are the (percentile, ms) points of a stored histogram:
// the spectrum's percentiles up to the first one that its count cannot
// resolve (fewer than one sample above it), shown at the maximum. ok is
// false when there is no histogram or it cannot be read (then the
// p50..p999 metrics are used: files written before histograms were
// stored).
func histogramPoints(s string) (pts [][2]float64, ok bool) {
	if s == "" {
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	h, err := hdrhistogram.Decode(raw)
	if err != nil || h.TotalCount() == 0 {
		return nil, false
	}
	n := float64(h.TotalCount())
	for _, q := range spectrumPoints {
		if (100-q)/100*n < 1-1e-9 { // 1e-9: 100-99.9 is 0.0999…
			pts = append(pts, [2]float64{q, ms(time.Duration(h.Max()))})
			break
		}
		pts = append(pts, [2]float64{q, ms(time.Duration(h.ValueAtQuantile(q)))})
	}
	return pts, true
}

// percentilePoints are the latency metrics by percentile, the spectrum of
// a result without a stored histogram.
var percentilePoints = []struct {
	name string
	p    float64
}{{metrics.P50, 50}, {metrics.P75, 75}, {metrics.P90, 90}, {metrics.P95, 95}, {metrics.P99, 99}, {metrics.P999, 99.9}}

// chartModel computes every chart, phase by phase in order of first
// appearance over the runs; servers in order of first appearance too.
func chartModel(runs []*result.Run, labels []string) []chartSection {
	var phases []string
	kinds := map[string]string{}
	for _, run := range runs {
		for _, ph := range run.Phases() {
			if _, ok := kinds[ph]; !ok {
				phases = append(phases, ph)
				kinds[ph] = run.Results[indexOfPhase(run, ph)].Kind
			}
		}
	}
	var servers []string
	seen := map[string]bool{}
	for _, run := range runs {
		for i := range run.Results {
			// With a matrix, a category is a (server, combination).
			if l := serverLabel(&run.Results[i]); !seen[l] {
				seen[l] = true
				servers = append(servers, l)
			}
		}
	}
	out := []chartSection{}
	for i, ph := range phases {
		p := phaseCharts{runs: runs, labels: labels, servers: servers, phase: ph, kind: kinds[ph], multi: len(runs) > 1, index: i}
		sec := chartSection{Phase: ph, Kind: p.kind, Title: Title(p.kind, ph), Charts: []chart{}}
		for _, c := range []*chart{p.throughput(), p.cpu(), p.memory(), p.percentiles()} {
			if c != nil {
				sec.Charts = append(sec.Charts, *c)
			}
		}
		sec.Charts = append(sec.Charts, p.kindSpectra()...)
		sec.Charts = append(sec.Charts, p.timelines()...)
		sec.Charts = append(sec.Charts, p.steps()...)
		sec.Charts = append(sec.Charts, p.kindCharts()...)
		sec.Charts = append(p.byVar(), sec.Charts...)
		out = append(out, sec)
	}
	return out
}

// phaseCharts computes the charts of one phase over every run.
type phaseCharts struct {
	runs        []*result.Run
	labels      []string // legend name of each run
	servers     []string // bar categories, over every run
	phase, kind string
	multi       bool // several runs: series name their run
	index       int  // of the phase, for chart ids
}

// repeats is the most repeats a result of the phase is the median of.
func (p *phaseCharts) repeats() int {
	n := 0
	for _, run := range p.runs {
		for _, r := range run.Results {
			if r.Phase == p.phase {
				n = max(n, r.N)
			}
		}
	}
	return n
}

// withRepeats adds to a bar chart's note that its bars are medians.
func withRepeats(note string, n int) string {
	if n < 2 {
		return note
	}
	s := fmt.Sprintf("medians of %d repeats (the tables show each figure's spread)", n)
	if note == "" {
		return s
	}
	return note + "; " + s
}

func (p *phaseCharts) id(what string) string { return fmt.Sprintf("c%d-%s", p.index, what) }

// result returns a server's result in a run if it succeeded, or nil: a
// failed result's figures are partial and draw nothing.
func (p *phaseCharts) result(run *result.Run, server string) *result.Result {
	r := p.find(run, server)
	if r == nil || !r.OK {
		return nil
	}
	return r
}

// find returns the result of a category (serverLabel) in a run, or nil.
func (p *phaseCharts) find(run *result.Run, label string) *result.Result {
	for i := range run.Results {
		r := &run.Results[i]
		if r.Phase == p.phase && serverLabel(r) == label {
			return r
		}
	}
	return nil
}

// bars returns a bar chart with a series per run, or nil when no result
// has the figure f reads.
func (p *phaseCharts) bars(what, title, unit, note string, f func(r *result.Result) (float64, bool)) *chart {
	c := &chart{ID: p.id(what), Type: chartBars, Title: title, Unit: unit, Note: withRepeats(note, p.repeats()), Categories: p.servers}
	drawn := false
	for i, run := range p.runs {
		name := "this run"
		if p.multi {
			name = p.labels[i]
		}
		s := chartSeries{Name: name, Values: make([]*float64, len(p.servers))}
		for j, srv := range p.servers {
			if r := p.result(run, srv); r != nil {
				if x, ok := f(r); ok && !math.IsNaN(x) && !math.IsInf(x, 0) {
					s.Values[j] = &x
					drawn = true
				}
			}
		}
		c.Series = append(c.Series, s)
	}
	if !drawn {
		return nil
	}
	return c
}

// throughput is the phase's headline rate per server; nil for a kind
// that declares none.
func (p *phaseCharts) throughput() *chart {
	name, unit := p.headline()
	if name == "" {
		return nil
	}
	return p.bars("throughput", "Throughput: "+name, unit, "", metricOf(name))
}

// cpu is the CPU-seconds per million messages, server next to client.
func (p *phaseCharts) cpu() *chart {
	c := &chart{ID: p.id("cpu"), Type: chartBars, Title: "CPU-seconds per million messages: server vs client", Unit: "CPU-s / 1M",
		Categories: p.servers, Note: "the client must spend less than the server, or the row measures the client"}
	drawn := false
	for i, run := range p.runs {
		for _, side := range []struct{ name, metric string }{{"server", metrics.ServerCPUPer1M}, {"client", metrics.ClientCPUPer1M}} {
			name := side.name
			if p.multi {
				name += " · " + p.labels[i]
			}
			s := chartSeries{Name: name, Values: make([]*float64, len(p.servers))}
			for j, srv := range p.servers {
				if r := p.result(run, srv); r != nil {
					if x, ok := metricOf(side.metric)(r); ok {
						s.Values[j] = &x
						drawn = true
					}
				}
			}
			c.Series = append(c.Series, s)
		}
	}
	if !drawn {
		return nil
	}
	return c
}

// memory is the server memory per connection.
func (p *phaseCharts) memory() *chart {
	note := "server RSS (highest sample) / connections open: the process's base memory included"
	if d, ok := metricDef(p.kind, metrics.MemPerConn); ok {
		note = d.Doc // the kind measures it itself
	}
	return p.bars("mem", "Memory per connection", "KiB", note, memPerConn)
}

// percentiles is the latency spectrum, a series per (server, run).
func (p *phaseCharts) percentiles() *chart {
	return p.spectrum(p.id("lat"), "Latency by percentile", func(r *result.Result) (string, bool) { return r.Histogram, true })
}

// spectrum is a latency spectrum chart, a series per (server, run), from
// the histogram hist finds in a result (its percentile metrics when the
// histogram is empty and fallback says the result's own metrics are it).
func (p *phaseCharts) spectrum(id, title string, hist func(r *result.Result) (h string, fallback bool)) *chart {
	c := &chart{ID: id, Type: chartPercentiles, Title: title, Unit: "ms"}
	for j, srv := range p.servers {
		for i, run := range p.runs {
			r := p.result(run, srv)
			if r == nil {
				continue
			}
			s := p.series(srv, j, i)
			h, fallback := hist(r)
			if pts, ok := histogramPoints(h); ok {
				s.Points = pts
			} else if fallback {
				for _, q := range percentilePoints {
					if _, ok := r.Metrics[q.name]; ok {
						if d := r.Metrics.Dur(q.name); d > 0 {
							s.Points = append(s.Points, [2]float64{q.p, ms(d)})
						}
					}
				}
			}
			if len(s.Points) > 0 {
				c.Series = append(c.Series, s)
			}
		}
	}
	if len(c.Series) == 0 {
		return nil
	}
	return c
}

// kindSpectra are the kind's own latency spectra (Kind.Spectra: a
// script's named exchanges), a chart per name in order of appearance.
func (p *phaseCharts) kindSpectra() []chart {
	k, ok := scenarios.Lookup(p.kind)
	if !ok || k.Spectra == nil {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	for _, run := range p.runs {
		for _, srv := range p.servers {
			if r := p.result(run, srv); r != nil {
				for _, sp := range k.Spectra(r) {
					if !seen[sp.Name] {
						seen[sp.Name] = true
						names = append(names, sp.Name)
					}
				}
			}
		}
	}
	var out []chart
	for i, name := range names {
		c := p.spectrum(p.id(fmt.Sprintf("spectrum-%d", i)), "Latency by percentile: "+name, func(r *result.Result) (string, bool) {
			for _, sp := range k.Spectra(r) {
				if sp.Name == name {
					return sp.Histogram, false
				}
			}
			return "", false
		})
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// timelines are the per-second charts of results that carry a timeline
// (failed ones too: the seconds before the failure are real), a series per
// (server, run). A late-messages chart of zeros is left out: the table's 0
// says it better.
func (p *phaseCharts) timelines() []chart {
	var out []chart
	for _, tl := range []struct {
		what, title, unit string
		f                 func(p result.Point) float64
	}{
		{"sent", "Messages sent per second", "messages/s", func(p result.Point) float64 { return float64(p.Sent) }},
		{"recv", "Echoes received per second", "echoes/s", func(p result.Point) float64 { return float64(p.Recv) }},
		{"late", "Late messages per second", "messages/s", func(p result.Point) float64 { return float64(p.Late) }},
		{"p99", "p99 latency per second", "ms", func(p result.Point) float64 { return ms(p.P99) }},
	} {
		c := chart{ID: p.id("tl-" + tl.what), Type: chartTimeline, Title: tl.title, Unit: tl.unit}
		nonZero := false
		for j, srv := range p.servers {
			for i, run := range p.runs {
				r := p.find(run, srv)
				if r == nil || len(r.Timeline) == 0 {
					continue
				}
				s := p.series(srv, j, i)
				for _, pt := range r.Timeline {
					v := tl.f(pt)
					s.Points = append(s.Points, [2]float64{float64(pt.T), v})
					nonZero = nonZero || v != 0
				}
				c.Series = append(c.Series, s)
			}
		}
		if len(c.Series) > 0 && (nonZero || tl.what != "late") {
			out = append(out, c)
		}
	}
	return out
}

// series starts the line of server j in run i: named by the server (and
// the run when there are several), coloured by the server, dashed by run.
func (p *phaseCharts) series(server string, j, i int) chartSeries {
	if !p.multi {
		return chartSeries{Name: server}
	}
	return chartSeries{Name: server + " · " + p.labels[i], Color: &j, Dash: &i}
}

func indexOfPhase(run *result.Run, phase string) int {
	for i := range run.Results {
		if run.Results[i].Phase == phase {
			return i
		}
	}
	return -1
}

// metricOf reads a metric as a float; ok false when absent.
func metricOf(name string) func(r *result.Result) (float64, bool) {
	return func(r *result.Result) (float64, bool) {
		if _, ok := r.Metrics[name]; !ok {
			return 0, false
		}
		return r.Metrics.Float(name), true
	}
}

// memPerConn is the server memory per connection in KiB: the kind's own
// mem_per_conn when it has one, else mem_max over the connections open.
func memPerConn(r *result.Result) (float64, bool) {
	if _, ok := r.Metrics[metrics.MemPerConn]; ok {
		return float64(r.Metrics.Int(metrics.MemPerConn)) / 1024, true
	}
	if _, ok := r.Metrics[metrics.MemMax]; !ok {
		return 0, false
	}
	conns := r.Metrics.Int(metrics.Conns)
	if conns <= 0 {
		return 0, false
	}
	return float64(r.Metrics.Int(metrics.MemMax)) / float64(conns) / 1024, true
}

// metricDef returns a kind's declaration of a metric.
func metricDef(kind, name string) (metrics.Def, bool) {
	for _, d := range scenarios.MetricDefs(kind) {
		if d.Name == name {
			return d, true
		}
	}
	return metrics.Def{}, false
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
