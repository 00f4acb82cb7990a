package report

import "github.com/wsplan/wsplan/internal/result"

// fanout are the charts of a fan-out (broadcast) phase, from its metrics:
// deliveries per second per server, and the fan-out latency (time until a
// whole room has a message: fanout_p50, fanout_p99) next to the p99 of
// single deliveries, a bar per figure (and run). Phases without these
// metrics get none.
func (p *phaseCharts) fanout() []chart {
	var out []chart
	if c := p.bars("fanout-rate", "Fan-out: deliveries per second", "deliveries/s",
		"distinct messages received intact over every subscriber / (duration + drain)", metricOf("delivery_rate")); c != nil {
		out = append(out, *c)
	}
	c := chart{ID: p.id("fanout-lat"), Type: chartBars, Title: "Fan-out latency: the whole room vs one delivery", Unit: "ms",
		Categories: p.servers, Note: withRepeats("fan-out: from the scheduled publish until the last (not slow) subscriber of the room has the message", p.repeats())}
	drawn := false
	for i, run := range p.runs {
		for _, fig := range []struct{ name, metric string }{
			{"fan-out p50", "fanout_p50"}, {"fan-out p99", "fanout_p99"}, {"delivery p99", "p99"},
		} {
			name := fig.name
			if p.multi {
				name += " · " + p.labels[i]
			}
			s := chartSeries{Name: name, Values: make([]*float64, len(p.servers))}
			for j, srv := range p.servers {
				r := p.result(run, srv)
				if r == nil || !resultHas(r, "fanout_p99") {
					continue
				}
				if resultHas(r, fig.metric) {
					x := ms(r.Metrics.Dur(fig.metric))
					s.Values[j] = &x
					drawn = true
				}
			}
			c.Series = append(c.Series, s)
		}
	}
	if drawn {
		out = append(out, c)
	}
	return out
}

// resultHas reports whether a result has a metric.
func resultHas(r *result.Result, name string) bool {
	_, ok := r.Metrics[name]
	return ok
}
