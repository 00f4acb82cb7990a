package assert

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/scenarios/echo"

	"github.com/expr-lang/expr/conf"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

func testPlan(asserts ...plan.Assertion) *plan.Plan {
	return &plan.Plan{
		File: "p.yaml",
		Phases: []plan.Phase{
			{Kind: "connect", PhaseKeys: plan.PhaseKeys{Name: "connect"}, Spec: &scenarios.Connect{}},
			{Kind: "echo", PhaseKeys: plan.PhaseKeys{Name: "echo"}, Spec: &echo.Phase{}},
		},
		Assert: asserts,
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		a    plan.Assertion
		want string
	}{
		{plan.Assertion{Expr: "tps > 100 &&", Line: 7}, `p.yaml:7: assert[0].expr: "tps > 100 &&": unexpected token EOF`},
		{plan.Assertion{Expr: "p99 > 5", Phase: "echo", Line: 8}, `p.yaml:8: assert[0].expr: "p99 > 5": invalid operation: > (mismatched types time.Duration and int) (1:5): latencies are durations, write the bound as one, e.g. duration("5ms")`},
		{plan.Assertion{Expr: "p99 - 5 > p50", Phase: "echo", Line: 9}, `p.yaml:9: assert[0].expr: "p99 - 5 > p50": invalid operation: - (mismatched types time.Duration and int) (1:5): latencies are durations`},
		{plan.Assertion{Expr: "tpss > 1", Line: 9}, `p.yaml:9: assert[0].expr: "tpss > 1": unknown name tpss`},
		{plan.Assertion{Expr: "eer > 1", Phase: "connect", Line: 10}, `p.yaml:10: assert[0].expr: "eer > 1": unknown name eer`},
		{plan.Assertion{Expr: "failed", Line: 11}, `p.yaml:11: assert[0].expr: "failed": expected bool, but got int64`},
		{plan.Assertion{Expr: "tps > 1", Phase: "rate9", Line: 12}, `p.yaml:12: assert[0].expr: phase "rate9" is not in this plan`},
	}
	for _, c := range cases {
		_, err := Compile(testPlan(c.a))
		var errs plan.Errors
		if !errors.As(err, &errs) || len(errs) != 1 {
			t.Errorf("%q: got %v, want one plan error", c.a.Expr, err)
			continue
		}
		if got := errs[0].Error(); !strings.HasPrefix(got, c.want) {
			t.Errorf("%q:\n got  %s\n want %s", c.a.Expr, got, c.want)
		}
	}
}

func TestCompileOK(t *testing.T) {
	as, err := Compile(testPlan(
		plan.Assertion{Expr: `failed == 0 && p99 < duration("200ms")`},
		plan.Assertion{Expr: `eer > 1`}, // only echo has eer: applies to echo only
		plan.Assertion{Expr: `tps >= 0.8 * results.gorilla.echo.tps`, Phase: "echo"},
		plan.Assertion{Expr: `tps >= 0.9 * baseline.tps`, Phase: "echo"},
	))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := as[1].progs["connect"]; ok {
		t.Error("eer assertion compiled for connect, which has no eer")
	}
	if !as[3].UsesBaseline() || as[0].UsesBaseline() {
		t.Error("UsesBaseline wrong")
	}
	if got := strings.Join(as[0].paths, ","); got != "failed,p99" {
		t.Errorf("paths = %s", got)
	}
	if got := strings.Join(as[2].paths, ","); got != "results.gorilla.echo.tps,tps" {
		t.Errorf("paths = %s", got)
	}
}

func echoResult(server string, tps float64, p99 time.Duration, ok bool) result.Result {
	return result.Result{Server: server, Framework: server, Phase: "echo", Kind: "echo", OK: ok, Error: map[bool]string{false: "server died"}[ok],
		Metrics: metrics.Values{"tps": tps, "p99": p99, "failed": int64(0), "eer": 1.5}}
}

func TestEvaluate(t *testing.T) {
	as, err := Compile(testPlan(
		plan.Assertion{Expr: `failed == 0 && p99 < duration("200ms")`, Phase: "echo"},
		plan.Assertion{Expr: `tps >= 0.8 * results.gorilla.echo.tps`, Phase: "echo", Servers: []string{"gws"}},
		plan.Assertion{Name: "no regression", Expr: `tps >= 0.9 * baseline.tps`, Phase: "echo"},
	))
	if err != nil {
		t.Fatal(err)
	}
	run := &result.Run{Results: []result.Result{
		echoResult("gorilla", 1000, 100*time.Millisecond, true),
		echoResult("gws", 700, 300*time.Millisecond, true),
		echoResult("nbio", 0, 0, false),
	}}
	base := &result.Run{Results: []result.Result{echoResult("gorilla", 1200, 0, true)}}
	got := Evaluate(as, run, base)
	type row struct {
		server string
		pass   bool
		err    string
	}
	want := []row{
		{"gorilla", true, ""}, {"gws", false, ""}, {"nbio", false, "phase failed: server died"},
		{"gws", false, ""},
		{"gorilla", false, ""}, {"gws", false, "baseline has no result for gws/echo"}, {"nbio", false, "phase failed: server died"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d outcomes, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Server != w.server || g.Pass != w.pass || g.Error != w.err {
			t.Errorf("%d: got %s pass=%v err=%q, want %+v", i, g.Server, g.Pass, g.Error, w)
		}
	}
	if v := got[3].Values["results.gorilla.echo.tps"]; v != 1000.0 {
		t.Errorf("values = %v", got[3].Values)
	}
	if v := got[1].Values["p99"]; v != 300*time.Millisecond {
		t.Errorf("values = %v", got[1].Values)
	}
	if Failed(got) != 6 {
		t.Errorf("Failed = %d", Failed(got))
	}
	// Without a baseline file, a baseline assertion is an error, not a pass.
	if g := as[2].Check(&run.Results[0], run, nil); g.Pass || !strings.Contains(g.Error, "--baseline") {
		t.Errorf("no baseline: %+v", g)
	}
}

func TestMemoryBudgetIsExprs(t *testing.T) {
	if MemoryBudget != conf.DefaultMemoryBudget {
		t.Errorf("MemoryBudget = %d, expr's default is %d", MemoryBudget, conf.DefaultMemoryBudget)
	}
}

// The dry run at load fails an expression that blows the memory budget,
// and only that: runtime errors that depend on the run's values pass.
func TestCompileDryRun(t *testing.T) {
	cases := []struct {
		expr, phase string
		want        string // "" = compiles
	}{
		{`map(1..100000000, # * 2) | len() > 0`, "", "exceeds expr's memory budget (1000000) when evaluated once at load with every metric zero"},
		{`len(1..2000000) > 0`, "echo", "exceeds expr's memory budget"},
		{`all(1..2000, {all(1..2000, {# > 0})})`, "echo", "exceeds expr's memory budget"},
		{`len(repeat("x", 2000000)) > 0`, "echo", "exceeds expr's memory budget"},
		// results and baseline hold every server and phase of the plan at
		// load, so the budget is reached behind them too.
		{`results.gws.echo.tps >= 0 && baseline.tps >= 0 && len(1..2000000) > 0`, "echo", "exceeds expr's memory budget"},
		// Within the budget.
		{`len(1..1000) == 1000`, "", ""},
		// Values of the run, zero at load: no load error.
		{`tps >= 0.8 * results.gorilla.echo.tps`, "echo", ""},
		{`results.gws.connect.success > 0`, "", ""},
		{`tps >= 0.9 * baseline.tps`, "echo", ""},
		{`success % failed == 0`, "echo", ""},                // integer modulo by zero
		{`tps / cpu_avg > 1`, "echo", ""},                    // float division by zero
		{`results.nobody.echo.tps > 0`, "echo", ""},          // no such server: nil at load
		{`results["gorilla"]["echo#2"].tps > 0`, "echo", ""}, // no such phase
		{`failed == 0 && p99 < duration("200ms")`, "", ""},
	}
	for _, c := range cases {
		p := testPlan(plan.Assertion{Expr: c.expr, Phase: c.phase, Line: 3})
		p.Servers = []plan.Server{{Name: "gorilla"}, {Name: "gws"}}
		_, err := Compile(p)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v, want it to compile", c.expr, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), `p.yaml:3: assert[0].expr: "`) {
			t.Errorf("%q: %v, want p.yaml:3 and %q", c.expr, err, c.want)
		}
	}
}

func TestCompileDryRunTimeout(t *testing.T) {
	defer func(d time.Duration) { dryRunTimeout = d }(dryRunTimeout)
	dryRunTimeout = time.Nanosecond
	_, err := Compile(testPlan(plan.Assertion{Expr: `all(1..900000, {# > 0})`, Phase: "echo", Line: 4}))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:4: assert[0].expr: ") || !strings.Contains(err.Error(), "still running after 1ns") {
		t.Errorf("got %v, want a timeout at p.yaml:4", err)
	}
}

// TestRepeatsAndVars: on a collapsed run the bare metric is the median,
// repeats.<metric> every repeat, vars.<name> the combination (sizes as
// bytes), and results.<server> the same combination's.
func TestRepeatsAndVars(t *testing.T) {
	p := testPlan(
		plan.Assertion{Name: "median", Expr: `tps == 1000`, Phase: "echo"},
		plan.Assertion{Name: "every repeat", Expr: `all(repeats.tps, # >= 900)`, Phase: "echo"},
		plan.Assertion{Name: "count", Expr: `len(repeats.tps) == 3`, Phase: "echo"},
		plan.Assertion{Name: "by payload", Expr: `vars.payload == 1024 ? tps < 1500 : tps > 1500`, Phase: "echo"},
		plan.Assertion{Name: "same combination", Expr: `results.gorilla.echo.tps == tps`, Phase: "echo"},
	)
	p.Matrix = []plan.MatrixVar{{Name: "payload", Values: []string{"64", "1KiB"}}}
	as, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	var rs []result.Result
	for _, c := range []struct {
		payload string
		tps     []float64
	}{{"1KiB", []float64{950, 1000, 1100}}, {"64", []float64{2000, 880, 2100}}} {
		for i, tps := range c.tps {
			r := echoResult("gorilla", tps, time.Millisecond, true)
			r.Repeat, r.Vars = i+1, map[string]string{"payload": c.payload}
			rs = append(rs, r)
		}
	}
	view := result.Collapse(&result.Run{Results: rs})
	if len(view.Results) != 2 {
		t.Fatalf("collapsed to %d results, want 2", len(view.Results))
	}
	got := Evaluate(as, view, nil)
	want := map[string][]bool{ // per assertion: 1KiB, 64
		"median":           {true, false},
		"every repeat":     {true, false},
		"count":            {true, true},
		"by payload":       {true, true},
		"same combination": {true, true},
	}
	if len(got) != 10 {
		t.Fatalf("got %d outcomes: %+v", len(got), got)
	}
	for i, g := range got {
		w := want[g.Name][i%2]
		if g.Pass != w || g.Error != "" {
			t.Errorf("%s %v: pass=%v err=%q, want pass=%v", g.Name, g.Vars, g.Pass, g.Error, w)
		}
	}
}

// The rate phase's `duration` metric does not shadow duration(): both read
// as the plan means them.
func TestDurationMetricAndBuiltin(t *testing.T) {
	prog, err := compileFor(`p99 < duration("5ms") && duration >= duration("10s")`, scenarios.MetricDefs("rate"))
	if err != nil {
		t.Fatal(err)
	}
	e := env(scenarios.MetricDefs("rate"))
	e["p99"], e["duration"] = time.Millisecond, 10*time.Second
	if v, err := eval(prog, e); err != nil || v != true {
		t.Errorf("got %v, %v; want true", v, err)
	}
	e["duration"] = 9 * time.Second
	if v, err := eval(prog, e); err != nil || v != false {
		t.Errorf("got %v, %v; want false", v, err)
	}
}

// TestMissingResult: an assertion reading another server's result names
// why it is missing (not run, no such phase, the phase failed) before the
// expression engine's own error.
func TestMissingResult(t *testing.T) {
	as, err := Compile(testPlan(
		plan.Assertion{Expr: `tps >= 0.8 * results.gorilla.echo.tps`, Phase: "echo", Servers: []string{"gws"}},
		plan.Assertion{Expr: `tps >= 0.8 * results.nbio.echo.tps`, Phase: "echo", Servers: []string{"gws"}},
		plan.Assertion{Expr: `tps >= 0.8 * results.gws.hold.tps`, Phase: "echo", Servers: []string{"gws"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	run := &result.Run{Results: []result.Result{
		echoResult("gws", 700, 300*time.Millisecond, true),
		echoResult("nbio", 0, 0, false),
	}}
	got := Evaluate(as, run, nil)
	want := []string{
		"results.gorilla.echo: server gorilla has no result in this run (not run: --only, or the run stopped before it)",
		"results.nbio.echo: that phase failed: server died",
		"results.gws.hold: server gws has no phase hold",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d outcomes, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Pass || !strings.HasPrefix(got[i].Error, w+" (") {
			t.Errorf("%d: pass=%v error %q, want it to start with %q", i, got[i].Pass, got[i].Error, w)
		}
	}
}
