package report

import (
	"fmt"
	"math"
	"time"

	"github.com/wsplan/wsplan/internal/result"
)

// The chart types the page's script draws.
const (
	chartBars        = "bars"        // one group of bars per category (server), one bar per series
	chartPercentiles = "percentiles" // latency by percentile on a log "nines" axis
	chartTimeline    = "timeline"    // a value per second of a phase
)

// chart is one chart of the HTML page, computed here so the script only
// draws: what to show is a pure function of the runs, tested in Go.
type chart struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	Title string `json:"title"`
	Unit  string `json:"unit"` // of the values: "echoes/s", "ms", "KiB"
	Note  string `json:"note,omitempty"`
	// Categories are the bar groups (servers), for bars.
	Categories []string      `json:"categories,omitempty"`
	Series     []chartSeries `json:"series"`
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
}

// look returns a series named and styled for (server j, run i).
func look(name string, server, run int, multi bool) chartSeries {
	s := chartSeries{Name: name}
	if multi {
		s.Color, s.Dash = &server, &run
	}
	return s
}

// chartSection is the charts of one phase.
type chartSection struct {
	Phase  string  `json:"phase"`
	Kind   string  `json:"kind"`
	Title  string  `json:"title"`
	Charts []chart `json:"charts"`
}

// rateMetric is the figure a kind's TPS bar shows: the rate the phase
// measures. A kind not listed shows "tps" when its results have it.
var rateMetric = map[string]struct{ name, unit string }{
	"connect": {"tps", "connections/s"},
	"echo":    {"tps", "echoes/s"},
	"rate":    {"recv_rate", "echoes received/s"},
}

// percentilePoints are the latency metrics by percentile; a result that one
// day stores a full histogram can add points up to 99.999.
var percentilePoints = []struct {
	name string
	p    float64
}{{"p50", 50}, {"p75", 75}, {"p90", 90}, {"p95", 95}, {"p99", 99}, {"p999", 99.9}}

// chartModel computes every chart, phase by phase in order of first
// appearance over the runs.
func chartModel(runs []*result.Run, labels []string) []chartSection {
	var phases []string
	kinds := map[string]string{}
	for _, run := range runs {
		for _, ph := range phasesOf(run) {
			if _, ok := kinds[ph]; !ok {
				phases = append(phases, ph)
				kinds[ph] = run.Results[indexOfPhase(run, ph)].Kind
			}
		}
	}
	var servers []string
	seen := map[string]bool{}
	for _, run := range runs {
		for _, r := range run.Results {
			if !seen[r.Server] {
				seen[r.Server] = true
				servers = append(servers, r.Server)
			}
		}
	}
	multi := len(runs) > 1
	out := []chartSection{}
	for pi, ph := range phases {
		kind := kinds[ph]
		sec := chartSection{Phase: ph, Kind: kind, Title: Title(kind, ph), Charts: []chart{}}
		id := func(what string) string { return fmt.Sprintf("c%d-%s", pi, what) }
		// find returns the server's result if it succeeded, or nil.
		find := func(run *result.Run, server string) *result.Result {
			r := run.Find(server, ph)
			if r == nil || !r.OK {
				return nil
			}
			return r
		}
		bars := func(what, title, unit, note string, f func(r *result.Result) (float64, bool), series func(run string) string) {
			c := chart{ID: id(what), Type: chartBars, Title: title, Unit: unit, Note: note, Categories: servers}
			any := false
			for i, run := range runs {
				s := chartSeries{Name: series(labels[i]), Values: make([]*float64, len(servers))}
				for j, srv := range servers {
					if r := find(run, srv); r != nil {
						if x, ok := f(r); ok && !math.IsNaN(x) && !math.IsInf(x, 0) {
							s.Values[j] = &x
							any = true
						}
					}
				}
				c.Series = append(c.Series, s)
			}
			if any {
				sec.Charts = append(sec.Charts, c)
			}
		}
		runSeries := func(label string) string {
			if multi {
				return label
			}
			return "this run"
		}

		// TPS.
		rm, ok := rateMetric[kind]
		if !ok {
			rm.name, rm.unit = "tps", "per second"
		}
		bars("tps", "Throughput: "+rm.name, rm.unit, "", metricOf(rm.name, 1), runSeries)

		// CPU-seconds per million, server next to client.
		cpu := chart{ID: id("cpu"), Type: chartBars, Title: "CPU-seconds per million messages: server vs client", Unit: "CPU-s / 1M", Categories: servers,
			Note: "the client must spend less than the server, or the row measures the client"}
		anyCPU := false
		for i, run := range runs {
			for _, side := range []struct{ name, metric string }{{"server", "server_cpu_per_1m"}, {"client", "client_cpu_per_1m"}} {
				name := side.name
				if multi {
					name += " · " + labels[i]
				}
				s := chartSeries{Name: name, Values: make([]*float64, len(servers))}
				for j, srv := range servers {
					if r := find(run, srv); r != nil {
						if x, ok := metricOf(side.metric, 1)(r); ok {
							s.Values[j] = &x
							anyCPU = true
						}
					}
				}
				cpu.Series = append(cpu.Series, s)
			}
		}
		if anyCPU {
			sec.Charts = append(sec.Charts, cpu)
		}

		// Memory per connection.
		memNote := "server RSS (highest sample) / connections open: the process's base memory included"
		if kind == "hold" {
			memNote = "server RSS growth from before the first phase to the start of the hold / connections"
		}
		bars("mem", "Memory per connection", "KiB", memNote, memPerConn, runSeries)

		// Latency percentiles: one series per (server, run).
		pc := chart{ID: id("lat"), Type: chartPercentiles, Title: "Latency by percentile", Unit: "ms"}
		if kind == "connect" {
			pc.Title = "Connect (handshake) latency by percentile"
		}
		for j, srv := range servers {
			for i, run := range runs {
				r := find(run, srv)
				if r == nil {
					continue
				}
				s := look(seriesName(srv, labels[i], multi), j, i, multi)
				for _, q := range percentilePoints {
					if _, ok := r.Metrics[q.name]; ok {
						if d := r.Metrics.Dur(q.name); d > 0 {
							s.Points = append(s.Points, [2]float64{q.p, ms(d)})
						}
					}
				}
				if len(s.Points) > 0 {
					pc.Series = append(pc.Series, s)
				}
			}
		}
		if len(pc.Series) > 0 {
			sec.Charts = append(sec.Charts, pc)
		}

		// Per-second timelines, for results that carry one.
		for _, tl := range []struct {
			what, title, unit string
			f                 func(p result.Point) float64
		}{
			{"sent", "Messages sent per second", "messages/s", func(p result.Point) float64 { return float64(p.Sent) }},
			{"recv", "Echoes received per second", "echoes/s", func(p result.Point) float64 { return float64(p.Recv) }},
			{"late", "Late messages per second", "messages/s", func(p result.Point) float64 { return float64(p.Late) }},
			{"p99", "p99 latency per second", "ms", func(p result.Point) float64 { return ms(p.P99) }},
		} {
			c := chart{ID: id("tl-" + tl.what), Type: chartTimeline, Title: tl.title, Unit: tl.unit}
			any := false
			for j, srv := range servers {
				for i, run := range runs {
					r := run.Find(srv, ph)
					if r == nil || len(r.Timeline) == 0 {
						continue
					}
					s := look(seriesName(srv, labels[i], multi), j, i, multi)
					for _, p := range r.Timeline {
						v := tl.f(p)
						s.Points = append(s.Points, [2]float64{float64(p.T), v})
						any = any || v != 0
					}
					c.Series = append(c.Series, s)
				}
			}
			// A late-messages chart of zeros says less than the table's 0.
			if len(c.Series) > 0 && (any || tl.what != "late") {
				sec.Charts = append(sec.Charts, c)
			}
		}
		out = append(out, sec)
	}
	return out
}

// phasesOf returns a run's phase names in order of first appearance (the
// order of the tables).
func phasesOf(run *result.Run) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range run.Results {
		if !seen[r.Phase] {
			seen[r.Phase] = true
			out = append(out, r.Phase)
		}
	}
	return out
}

func indexOfPhase(run *result.Run, phase string) int {
	for i := range run.Results {
		if run.Results[i].Phase == phase {
			return i
		}
	}
	return -1
}

func seriesName(server, run string, multi bool) string {
	if multi {
		return server + " · " + run
	}
	return server
}

// metricOf reads a metric as a float, scaled; ok false when absent.
func metricOf(name string, scale float64) func(r *result.Result) (float64, bool) {
	return func(r *result.Result) (float64, bool) {
		if _, ok := r.Metrics[name]; !ok {
			return 0, false
		}
		return r.Metrics.Float(name) * scale, true
	}
}

// memPerConn is the server memory per connection in KiB: the kind's own
// mem_per_conn when it has one, else mem_max over the connections open.
func memPerConn(r *result.Result) (float64, bool) {
	if _, ok := r.Metrics["mem_per_conn"]; ok {
		return float64(r.Metrics.Int("mem_per_conn")) / 1024, true
	}
	if _, ok := r.Metrics[metricMemMax]; !ok {
		return 0, false
	}
	conns := r.Metrics.Int("conns")
	if conns <= 0 {
		return 0, false
	}
	return float64(r.Metrics.Int(metricMemMax)) / float64(conns) / 1024, true
}

const metricMemMax = "mem_max"

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
