package report

import (
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// kindCharts are the charts the phase's kind declares (scenarios.Kind.
// Charts), a bar per series, server and run; a chart no result can draw
// is left out.
func (p *phaseCharts) kindCharts() []chart {
	k, ok := scenarios.Lookup(p.kind)
	if !ok {
		return nil
	}
	var out []chart
	for _, kc := range k.Charts {
		if c := p.kindChart(kc); c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// kindChart draws one declared chart: one series is named after its run,
// as every bar chart; several are named by their Name (and run).
func (p *phaseCharts) kindChart(kc scenarios.Chart) *chart {
	value := func(name string) func(r *result.Result) (float64, bool) {
		return func(r *result.Result) (float64, bool) {
			if kc.Needs != "" && !resultHas(r, kc.Needs) || !resultHas(r, name) {
				return 0, false
			}
			if d, ok := metricDef(p.kind, name); ok && d.Kind == metrics.Duration {
				return ms(r.Metrics.Dur(name)), true
			}
			if d, ok := r.Metrics[name].(time.Duration); ok {
				return ms(d), true
			}
			return r.Metrics.Float(name), true
		}
	}
	if len(kc.Series) == 1 {
		return p.bars(kc.ID, kc.Title, kc.Unit, kc.Note, value(kc.Series[0].Metric))
	}
	c := chart{ID: p.id(kc.ID), Type: chartBars, Title: kc.Title, Unit: kc.Unit,
		Categories: p.servers, Note: withRepeats(kc.Note, p.repeats())}
	drawn := false
	for i, run := range p.runs {
		for _, fig := range kc.Series {
			name := fig.Name
			if p.multi {
				name += " · " + p.labels[i]
			}
			s := chartSeries{Name: name, Values: make([]*float64, len(p.servers))}
			f := value(fig.Metric)
			for j, srv := range p.servers {
				if r := p.result(run, srv); r != nil {
					if x, ok := f(r); ok {
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
	return &c
}

// resultHas reports whether a result has a metric.
func resultHas(r *result.Result, name string) bool {
	_, ok := r.Metrics[name]
	return ok
}
