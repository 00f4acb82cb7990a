package assert

// Evaluating compiled assertions against a run's results: the environment
// an expression sees (the row's metrics, the same server's other phases,
// repeats, the baseline, the plan's vars) and the verdict of each.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/units"
	"github.com/wsplan/wsplan/scenarios"
)

// Applies reports whether the assertion applies to a result.
func (a *Assertion) Applies(r *result.Result) bool {
	if _, ok := a.progs[r.Kind]; !ok {
		return false
	}
	if a.Phase != "" && a.Phase != r.Phase && a.Phase != r.Kind {
		return false
	}
	if len(a.Servers) > 0 {
		for _, s := range a.Servers {
			if s == r.Server {
				return true
			}
		}
		return false
	}
	return true
}

// Evaluate evaluates every assertion against every result it applies to.
// baseline may be nil.
func Evaluate(as []*Assertion, run *result.Run, baseline *result.Run) []result.Assertion {
	var out []result.Assertion
	for _, a := range as {
		for i := range run.Results {
			r := &run.Results[i]
			if a.Applies(r) {
				out = append(out, a.Check(r, run, baseline))
			}
		}
	}
	return out
}

// Check evaluates one assertion against one result.
func (a *Assertion) Check(r *result.Result, run *result.Run, baseline *result.Run) result.Assertion {
	out := result.Assertion{Server: r.Server, Phase: r.Phase, Name: a.Name, Expr: a.Expr, Vars: r.Vars}
	if !r.OK {
		out.Error = "phase failed: " + r.Error
		return out
	}
	e := Env(r, run, baseline)
	if a.base {
		if baseline == nil {
			out.Error = "no baseline: pass --baseline OLD.json"
			return out
		}
		if b, _ := e["baseline"].(map[string]any); len(b) == 0 {
			out.Error = fmt.Sprintf("baseline has no result for %s/%s", r.Server, r.Phase)
			return out
		}
	}
	out.Values = map[string]any{}
	for _, p := range a.paths {
		if v, err := expr.Eval(p, e); err == nil {
			out.Values[p] = v
		}
	}
	v, err := eval(a.progs[r.Kind], e)
	if err != nil {
		out.Error = oneLine(err.Error())
		if why := a.missingResult(run, r.Vars); why != "" {
			out.Error = why + " (" + out.Error + ")"
		}
		return out
	}
	out.Pass, _ = v.(bool) // AsBool guarantees a bool
	return out
}

// Env is the environment an expression sees for one result.
func Env(r *result.Result, run *result.Run, baseline *result.Run) map[string]any {
	e := env(scenarios.ResultDefs(r.Kind, r.Metrics))
	for k, v := range r.Metrics {
		e[k] = v
	}
	e["server"], e["framework"], e["phase"], e["kind"] = r.Server, r.Framework, r.Phase, r.Kind
	e["results"] = byServer(run, r.Vars)
	e["repeats"], e["vars"] = repeats(r), varsEnv(r.Vars)
	b := map[string]any{}
	if baseline != nil {
		if br := baseline.FindVars(r.Vars, r.Server, r.Phase); br != nil && br.OK {
			for k, v := range br.Metrics {
				b[k] = v
			}
		}
	}
	e["baseline"] = b
	return e
}

// missingResult says which results.<server>.<phase> the assertion reads
// that the run has no usable result for, and why: the server did not run
// (--only, or a run that stopped before it), has no such phase, or that
// phase failed. "" when every one it reads is there.
func (a *Assertion) missingResult(run *result.Run, vars map[string]string) string {
	for _, p := range a.paths {
		parts := strings.SplitN(p, ".", 4)
		if len(parts) < 3 || parts[0] != "results" {
			continue
		}
		server, phase := parts[1], parts[2]
		ran, found := false, (*result.Result)(nil)
		if run != nil {
			for i := range run.Results {
				o := &run.Results[i]
				if o.Server == server && result.SameVars(o.Vars, vars) {
					ran = true
					if o.Phase == phase {
						found = o
					}
				}
			}
		}
		switch {
		case !ran:
			return fmt.Sprintf("results.%s.%s: server %s has no result in this run (not run: --only, or the run stopped before it)", server, phase, server)
		case found == nil:
			return fmt.Sprintf("results.%s.%s: server %s has no phase %s", server, phase, server, phase)
		case !found.OK:
			return fmt.Sprintf("results.%s.%s: that phase failed: %s", server, phase, found.Error)
		}
	}
	return ""
}

// byServer is results.<server>.<phase>: the run's results measured with
// the same matrix combination.
func byServer(run *result.Run, vars map[string]string) map[string]any {
	out := map[string]any{}
	if run == nil {
		return out
	}
	for _, r := range run.Results {
		if !r.OK || !result.SameVars(r.Vars, vars) {
			continue
		}
		s, _ := out[r.Server].(map[string]any)
		if s == nil {
			s = map[string]any{}
			out[r.Server] = s
		}
		s[r.Phase] = map[string]any(r.Metrics)
	}
	return out
}

// Failed counts failed assertions.
func Failed(rs []result.Assertion) int {
	n := 0
	for _, r := range rs {
		if !r.Pass {
			n++
		}
	}
	return n
}

// repeats is repeats.<metric>: the metric in every repeat of a median
// result, in repeat order; a list of the one value for a single result.
func repeats(r *result.Result) map[string]any {
	out := map[string]any{}
	if len(r.Repeats) == 0 {
		for k, v := range r.Metrics {
			out[k] = []any{v}
		}
		return out
	}
	for _, m := range r.Repeats {
		for k, v := range m {
			l, _ := out[k].([]any)
			out[k] = append(l, v)
		}
	}
	return out
}

// varsEnv is vars.<name>: a result's matrix combination, each value an
// integer when it is one (vars.payload == 64), a size in bytes when it
// parses as one (1KiB is 1024), else the text.
func varsEnv(vars map[string]string) map[string]any {
	out := make(map[string]any, len(vars))
	for k, v := range vars {
		out[k] = varValue(v)
	}
	return out
}

func varValue(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if n, err := units.ParseSize(s); err == nil {
		return int64(n)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}

// Gates reports whether an assertion of as that applies to server's
// phase (of kind) reads metric itself, not another result's: such an
// assertion decides whether that phase's fault counted in metric passes
// (scenarios.Judge).
func Gates(as []*Assertion, server, phase, kind, metric string) bool {
	r := &result.Result{Server: server, Phase: phase, Kind: kind}
	for _, a := range as {
		if a.Applies(r) && slices.Contains(a.paths, metric) {
			return true
		}
	}
	return false
}
