// Package assert compiles a plan's `assert:` expressions (expr-lang) against
// the metrics of the phases they apply to, and evaluates them against a
// run's results.
//
// Data flow: Compile runs right after the plan loads, so a typo, a wrong type
// or a metric the phase does not have fails before anything starts; it also
// evaluates each expression once against a zero-valued environment (the dry
// run), so one that blows expr's memory budget or runs for seconds fails
// then too, not after the whole run. Evaluate runs after the run (and Check
// after each phase, for `abort: true`).
//
// The environment of an expression (documented in docs/plans.md, Assertions):
//   - every metric of the phase, by name (scenarios.MetricDefs): counts and
//     byte sizes are int, rates and percents float, latencies time.Duration
//     (compare with duration("50ms")), client_bound and server_bound bool;
//   - server, framework, phase (the phase's name) and kind, strings;
//   - results: every result of the run, results.<server>.<phase>.<metric>;
//   - baseline: the same server and phase in the --baseline file,
//     baseline.<metric>;
//   - repeats: repeats.<metric>, the metric in every repeat (--count) in
//     repeat order, while the bare metric is their median;
//   - vars: vars.<name>, the matrix combination the result was measured
//     with (numbers and sizes as integers: vars.payload == 1024).
//
// With repeats or a matrix, Evaluate is given the collapsed run
// (result.Collapse): one median result per combination, server and phase;
// results.<server>.<phase> and baseline see the same combination.
package assert

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/wsplan/wsplan/internal/exprlimit"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/scenarios"
)

// MemoryBudget is what one evaluation of an expression may allocate
// (exprlimit.MemoryBudget, shared with a search phase's slo). The dry run at
// load and the evaluation after a phase use the same budget.
const MemoryBudget = exprlimit.MemoryBudget

// DryRunTimeout bounds the dry run of one expression at load
// (exprlimit.DryRunTimeout).
const DryRunTimeout = exprlimit.DryRunTimeout

// dryRunTimeout is DryRunTimeout; tests lower it.
var dryRunTimeout = DryRunTimeout

// Assertion is one compiled `assert:` entry.
type Assertion struct {
	plan.Assertion
	progs map[string]*vm.Program // by phase kind it applies to
	paths []string               // variables and member paths it reads, for the report
	base  bool                   // reads baseline
}

// UsesBaseline reports whether the expression reads `baseline`.
func (a *Assertion) UsesBaseline() bool { return a.base }

// Label is the assertion's name, or its expression.
func (a *Assertion) Label() string {
	if a.Name != "" {
		return a.Name
	}
	return a.Expr
}

// env builds the typed environment of a phase kind: the values are zero
// values of each metric's Go type, which is all expr needs to type-check.
func env(defs []metrics.Def) map[string]any {
	e := map[string]any{
		"server":    "",
		"framework": "",
		"phase":     "",
		"kind":      "",
		"results":   map[string]any{},
		"baseline":  map[string]any{},
		"repeats":   map[string]any{},
		"vars":      map[string]any{},
	}
	for _, d := range defs {
		e[d.Name] = d.Kind.Zero()
	}
	return e
}

// kindDefs are the metrics an assertion on a kind may read: the kind's,
// and those of every phase of that kind in p (scenarios.Extras: a
// script's exchanges).
func kindDefs(p *plan.Plan, kind string) []metrics.Def {
	defs := scenarios.MetricDefs(kind)
	for _, ph := range p.Phases {
		if ph.Kind == kind {
			defs = metrics.Join(defs, scenarios.PhaseMetricDefs(kind, ph.Spec))
		}
	}
	return defs
}

// Compile compiles every assertion of p. It returns all problems at once, as
// plan errors naming the file, the line and the expression.
func Compile(p *plan.Plan) ([]*Assertion, error) {
	var out []*Assertion
	var errs plan.Errors
	fail := func(i int, a plan.Assertion, format string, args ...any) {
		errs = append(errs, &plan.Error{File: p.File, Line: a.Line, Field: fmt.Sprintf("assert[%d].expr", i),
			Msg: fmt.Sprintf(format, args...)})
	}
	for i, a := range p.Assert {
		kinds := kindsFor(p, a.Phase)
		if len(kinds) == 0 {
			fail(i, a, "phase %q is not in this plan", a.Phase)
			continue
		}
		c := &Assertion{Assertion: a, progs: map[string]*vm.Program{}}
		var firstErr error
		for _, k := range kinds {
			prog, err := compileFor(a.Expr, kindDefs(p, k))
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			c.progs[k] = prog
		}
		switch {
		case len(c.progs) == 0:
			fail(i, a, "%q: %v", a.Expr, firstErr)
			continue
		case a.Phase != "" && len(c.progs) < len(kinds):
			fail(i, a, "%q: %v", a.Expr, firstErr)
			continue
		}
		if err := c.dryRun(p); err != nil {
			fail(i, a, "%q: %v", a.Expr, err)
			continue
		}
		for _, prog := range c.progs {
			c.paths = paths(prog.Node())
			break
		}
		for _, path := range c.paths {
			if path == "baseline" || strings.HasPrefix(path, "baseline.") {
				c.base = true
			}
		}
		if msg := c.unmeasured(p, kinds); msg != "" {
			fail(i, a, "%q: %s", a.Expr, msg)
			continue
		}
		out = append(out, c)
	}
	if len(errs) > 0 {
		return out, errs
	}
	return out, nil
}

// unmeasured returns why the assertion reads a server resource metric
// (metrics.ServerResource) of a server whose resources are not measured (a
// url: server without pid:, pid_file: or metrics_url:), "" when it does
// not: such a metric would be absent from every result it checks.
func (a *Assertion) unmeasured(p *plan.Plan, kinds []string) string {
	var eer []string // the kinds' metrics made from server resources
	for _, k := range kinds {
		eer = append(eer, scenarios.ServerMetricsOf(k)...)
	}
	applies := func(name string) bool {
		return len(a.Servers) == 0 || slices.Contains(a.Servers, name)
	}
	for _, path := range a.paths {
		parts := strings.Split(path, ".")
		var metric string
		var servers []string
		switch {
		case len(parts) == 1:
			metric = parts[0]
		case parts[0] == "baseline" && len(parts) == 2:
			metric = parts[1]
		case parts[0] == "results" && len(parts) == 4:
			metric, servers = parts[3], []string{parts[1]}
		default:
			continue
		}
		if !metrics.ServerResource(metric, eer...) {
			continue
		}
		for _, s := range p.Servers {
			if s.Resources() {
				continue
			}
			if (servers == nil && applies(s.Name)) || slices.Contains(servers, s.Name) {
				return fmt.Sprintf("%s is a server resource and server %s is a url: target without pid:, pid_file: or metrics_url:, so it is not measured (n/a): add one of them, or limit the assertion with server:", metric, s.Name)
			}
		}
	}
	return ""
}

// dryRun evaluates the assertion once per phase kind against a zero-valued
// environment of that kind: every metric zero, results.<server>.<phase> of
// every server and phase of the plan with zero metrics, baseline with zero
// metrics. Only a blown memory budget or an evaluation longer than
// DryRunTimeout is an error: other runtime errors (a modulo by a zero
// metric, a missing key) depend on the values a run produces.
func (a *Assertion) dryRun(p *plan.Plan) error {
	kinds := make([]string, 0, len(a.progs))
	for k := range a.progs {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if err := dryRun(a.progs[k], zeroEnv(p, k), dryRunTimeout); err != nil {
			return err
		}
	}
	return nil
}

// dryRun runs prog on env and reports a blown memory budget or a run
// longer than timeout (exprlimit.DryRun).
func dryRun(prog *vm.Program, env map[string]any, timeout time.Duration) error {
	return exprlimit.DryRun(prog, env, timeout)
}

// eval evaluates prog on env within MemoryBudget.
func eval(prog *vm.Program, env map[string]any) (any, error) { return exprlimit.Eval(prog, env) }

// zeroEnv is the dry run's environment for a phase kind: env(kind) with
// results and baseline filled with zero metrics.
func zeroEnv(p *plan.Plan, kind string) map[string]any {
	e := env(kindDefs(p, kind))
	e["kind"] = kind
	results := map[string]any{}
	for _, s := range p.Servers {
		byPhase := map[string]any{}
		for _, ph := range p.Phases {
			byPhase[ph.Name] = zeroMetrics(scenarios.PhaseMetricDefs(ph.Kind, ph.Spec))
		}
		results[s.Name] = byPhase
	}
	e["results"] = results
	e["baseline"] = zeroMetrics(kindDefs(p, kind))
	reps := map[string]any{}
	for n, v := range zeroMetrics(kindDefs(p, kind)) {
		reps[n] = []any{v}
	}
	e["repeats"] = reps
	vars := map[string]any{}
	for _, m := range p.Matrix {
		vars[m.Name] = varValue(m.Values[0])
	}
	e["vars"] = vars
	return e
}

// zeroMetrics is every metric of a kind at its zero value.
func zeroMetrics(defs []metrics.Def) map[string]any {
	m := map[string]any{}
	for _, d := range defs {
		m[d.Name] = d.Kind.Zero()
	}
	return m
}

// kindsFor returns the phase kinds an assertion's `phase:` selects: the
// kind of the phase with that name, or that kind; every kind in the plan
// when empty.
func kindsFor(p *plan.Plan, phase string) []string {
	seen := map[string]bool{}
	var out []string
	for _, ph := range p.Phases {
		if phase == "" || ph.Name == phase || ph.Kind == phase {
			if !seen[ph.Kind] {
				seen[ph.Kind] = true
				out = append(out, ph.Kind)
			}
		}
	}
	return out
}

func compileFor(code string, defs []metrics.Def) (*vm.Program, error) {
	prog, err := expr.Compile(code, expr.Env(env(defs)), expr.AsBool(), exprlimit.Builtins())
	if err != nil {
		msg := oneLine(err.Error())
		if strings.Contains(msg, "mismatched types time.Duration") || strings.Contains(msg, "and time.Duration)") {
			msg += `: latencies are durations, write the bound as one, e.g. duration("5ms")`
		}
		return nil, fmt.Errorf("%s", msg)
	}
	return prog, nil
}

// oneLine keeps expr's first line (its message); the caret drawing that
// follows does not fit a one-line error.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// paths lists the variables and member chains an expression reads
// ("p99", "results.gorilla.echo.tps"), sorted, for the report's Values.
func paths(root ast.Node) []string {
	v := &pathVisitor{seen: map[string]bool{}}
	ast.Walk(&root, v)
	// Drop prefixes of longer chains ("results" when "results.x.y.z" is there).
	var out []string
	for p := range v.seen {
		prefix := false
		for q := range v.seen {
			if q != p && strings.HasPrefix(q, p+".") {
				prefix = true
				break
			}
		}
		if !prefix {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

type pathVisitor struct{ seen map[string]bool }

func (v *pathVisitor) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.IdentifierNode:
		v.seen[x.Value] = true
	case *ast.MemberNode:
		if s, ok := memberPath(x); ok {
			v.seen[s] = true
		}
	}
}

func memberPath(n ast.Node) (string, bool) {
	switch x := n.(type) {
	case *ast.IdentifierNode:
		return x.Value, true
	case *ast.MemberNode:
		base, ok := memberPath(x.Node)
		if !ok {
			return "", false
		}
		prop, ok := x.Property.(*ast.StringNode)
		if !ok {
			return "", false
		}
		return base + "." + prop.Value, true
	}
	return "", false
}
