package engine

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
)

// Repeats and the matrix.
//
// The run goes through the matrix combinations in order (Options.Plans, one
// plan per combination); within a combination it runs every server's phases
// Count times, interleaving the servers (A B C A B C, not A A A B B B), so
// slow drift of the host (thermal, other load, page cache) hits every
// server alike instead of one. Every repeat starts a fresh server process
// and a fresh client, exactly as a run of one repeat does. Results carry
// their repeat (from 1, when Count > 1) and their combination.

// count is the number of repeats: Options.Count, else the plan's repeat:.
func (o *Options) count() int {
	if o.Count > 0 {
		return o.Count
	}
	if o.Plan != nil && o.Plan.Repeat > 0 {
		return o.Plan.Repeat
	}
	return 1
}

// plans are the combinations to run: Options.Plans, else the one Plan.
func (o *Options) plans() []*plan.Plan {
	if len(o.Plans) > 0 {
		return o.Plans
	}
	return []*plan.Plan{o.Plan}
}

// schedule runs every combination, repeat and server in turn.
func (e *runner) schedule(ctx context.Context) {
	n := e.o.count()
	for _, p := range e.o.plans() {
		e.plan = p
		e.vars = nil
		if len(p.Combo) > 0 {
			e.vars = maps.Clone(p.Combo)
		}
		for rep := 1; rep <= n; rep++ {
			if n > 1 {
				e.repeat = rep
			}
			e.logTag = logTag(p.Combo, p.Matrix, e.repeat)
			if n > 1 || len(p.Combo) > 0 {
				e.o.Notice("%s", roundName(p, rep, n))
			}
			for i, srv := range p.Servers {
				if ctx.Err() != nil {
					// Servers never started still get their rows, saying why.
					e.failRest(srv, 0, stopReason(ctx), "")
					continue
				}
				e.server(ctx, i, srv)
			}
		}
	}
}

// stamp records the current repeat and combination on a result.
func (e *runner) stamp(r *result.Result) {
	r.Repeat = e.repeat
	if e.vars != nil {
		r.Vars = maps.Clone(e.vars)
	}
}

// logTag distinguishes the server logs of combinations and repeats:
// "-payload_64-r2"; "" for a run of one.
func logTag(combo map[string]string, m []plan.MatrixVar, repeat int) string {
	s := ""
	for _, v := range m {
		if x, ok := combo[v.Name]; ok {
			s += "-" + unsafeName.ReplaceAllString(v.Name+"_"+x, "_")
		}
	}
	if repeat > 0 {
		s += fmt.Sprintf("-r%d", repeat)
	}
	return s
}

// planInfo is the run's record of the plan: the first combination's vars
// (the matrix vars are on each result), the count and the matrix.
func planInfo(o *Options) result.PlanInfo {
	p := o.Plan
	info := result.PlanInfo{Name: p.Name, File: p.File, Description: p.Description, Vars: p.Vars}
	if n := o.count(); n > 1 {
		info.Count = n
	}
	for _, m := range p.Matrix {
		info.Matrix = append(info.Matrix, result.MatrixVar{Name: m.Name, Values: m.Values})
	}
	if len(info.Matrix) > 0 {
		info.Vars = maps.Clone(p.Vars)
		for _, m := range p.Matrix {
			delete(info.Vars, m.Name)
		}
	}
	return info
}

// roundName announces a combination's repeat: "payload=64, repeat 2 of 3".
func roundName(p *plan.Plan, rep, n int) string {
	var parts []string
	for _, v := range p.Matrix {
		if x, ok := p.Combo[v.Name]; ok {
			parts = append(parts, v.Name+"="+x)
		}
	}
	s := strings.Join(parts, " ")
	if n > 1 {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("repeat %d of %d", rep, n)
	}
	return "== " + s
}
