package report

import (
	"github.com/wsplan/wsplan/internal/result"
)

// byVar is, for a run with a matrix, one chart per matrix var: the phase's
// throughput (headline) against the var's values, a line per server (per
// server and combination of the other vars, per run when there are
// several), from the medians. Nil without a matrix.
func (p *phaseCharts) byVar() []chart {
	name, unit := p.headline()
	if name == "" {
		return nil
	}
	var out []chart
	for _, v := range matrixVars(p.runs) {
		c := chart{ID: p.id("by-" + v.Name), Type: chartByVar, Title: "Throughput (" + name + ") by " + v.Name,
			Unit: unit, XLabel: v.Name, Categories: v.Values}
		index := map[string]int{}
		for i, x := range v.Values {
			index[x] = i
		}
		for i, run := range p.runs {
			lines := map[string]int{} // line name → series index
			for k := range run.Results {
				r := &run.Results[k]
				x, has := r.Vars[v.Name]
				if r.Phase != p.phase || !r.OK || !has {
					continue
				}
				y, ok := metricOf(name)(r)
				if !ok {
					continue
				}
				rest := map[string]string{}
				for n, val := range r.Vars {
					if n != v.Name {
						rest[n] = val
					}
				}
				line := r.Server
				if len(rest) > 0 {
					line += " " + result.VarsString(rest, nil)
				}
				if p.multi {
					line += " · " + p.labels[i]
				}
				j, seen := lines[line]
				if !seen {
					j = len(c.Series)
					lines[line] = j
					c.Series = append(c.Series, chartSeries{Name: line})
				}
				c.Series[j].Points = append(c.Series[j].Points, [2]float64{float64(index[x]), y})
			}
		}
		if len(c.Series) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// matrixVars are the matrix vars over runs, each with its values in plan
// order (the first run's matrix first), values seen only in results last.
func matrixVars(runs []*result.Run) []result.MatrixVar {
	var out []result.MatrixVar
	at := map[string]int{}
	add := func(name, value string) {
		i, ok := at[name]
		if !ok {
			i = len(out)
			at[name] = i
			out = append(out, result.MatrixVar{Name: name})
		}
		for _, x := range out[i].Values {
			if x == value {
				return
			}
		}
		out[i].Values = append(out[i].Values, value)
	}
	for _, run := range runs {
		for _, m := range run.Plan.Matrix {
			for _, v := range m.Values {
				add(m.Name, v)
			}
		}
	}
	for _, run := range runs {
		for _, n := range run.MatrixNames() {
			for _, r := range run.Results {
				if v, ok := r.Vars[n]; ok {
					add(n, v)
				}
			}
		}
	}
	return out
}
