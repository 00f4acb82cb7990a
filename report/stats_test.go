package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// repeatsRun is a run of two servers × n repeats, interleaved, with the
// given echo tps per repeat (gws then gorilla), optionally in a matrix.
func repeatsRun(gws, gorilla []float64, vars map[string]string) *result.Run {
	run := &result.Run{Schema: result.Schema, Plan: result.PlanInfo{Name: "t", Count: len(gws)}}
	for i := range gws {
		for _, s := range []struct {
			name string
			tps  float64
		}{{"gws", gws[i]}, {"gorilla", gorilla[i]}} {
			run.Results = append(run.Results, result.Result{Server: s.name, Framework: s.name, Phase: "echo", Kind: "echo", OK: true,
				Repeat: i + 1, Vars: vars,
				Metrics: metrics.Values{"tps": s.tps, "p99": time.Duration(s.tps) * time.Microsecond, "success": int64(1000), "client_bound": i == 1}})
		}
	}
	return run
}

func TestCollapse(t *testing.T) {
	run := repeatsRun([]float64{100, 110, 90, 104, 300}, []float64{50, 50, 50, 50, 50}, nil)
	view := result.Collapse(run)
	if len(view.Results) != 2 {
		t.Fatalf("%d results, want 2", len(view.Results))
	}
	g := view.Results[0]
	for _, c := range []struct {
		name string
		got  any
		want any
	}{
		{"server", g.Server, "gws"},
		{"n", g.N, 5},
		{"median tps", g.Metrics["tps"], 104.0},
		{"median p99 keeps its type", g.Metrics["p99"], 104 * time.Microsecond},
		{"count keeps its type", g.Metrics["success"], int64(1000)},
		{"bool: any repeat", g.Metrics["client_bound"], true},
		{"spread: farthest from the median", int(100 * g.Spread["tps"]), 188},
		{"repeats kept", len(g.Repeats), 5},
		{"collapsing twice is a no-op", len(result.Collapse(view).Results), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	var buf bytes.Buffer
	if err := Tables(&buf, run, nil, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "| gws       | 104 ±188% |") || !strings.Contains(out, RepeatsNote) {
		t.Errorf("table of medians:\n%s", out)
	}
}

// TestSignificance: benchmath's Mann-Whitney U calls a clear shift with 5
// repeats a side significant, overlapping samples ~, and cannot call
// anything significant with 3 a side.
func TestSignificance(t *testing.T) {
	for _, tc := range []struct {
		name      string
		old, cur  []float64
		wantSig   bool
		wantCell  string
		wantPLess float64
	}{
		{"shift", []float64{100, 101, 99, 102, 98}, []float64{120, 121, 119, 122, 118}, true, "120 ±2% (+20.0% p=0.008)", 0.05},
		{"noise", []float64{100, 110, 90, 105, 95}, []float64{101, 111, 91, 104, 96}, false, "101 ±10% (~ p=", 1.01},
		{"too few", []float64{100, 100.5, 99.5}, []float64{200, 201, 199}, false, "(~ p=0.100)", 1.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := result.Collapse(repeatsRun(tc.old, tc.old, nil))
			cur := result.Collapse(repeatsRun(tc.cur, tc.cur, nil))
			p, sig, ok := Significance(&cur.Results[0], &old.Results[0], "tps")
			if !ok || sig != tc.wantSig || p >= tc.wantPLess {
				t.Errorf("p=%v significant=%v ok=%v, want significant=%v", p, sig, ok, tc.wantSig)
			}
			var buf bytes.Buffer
			if err := Tables(&buf, cur, old, FormatMarkdown); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), tc.wantCell) || !strings.Contains(buf.String(), "Mann-Whitney") {
				t.Errorf("want %q in:\n%s", tc.wantCell, buf.String())
			}
		})
	}
	// One repeat a side: a plain delta, no test.
	old, cur := repeatsRun([]float64{100}, []float64{100}, nil), repeatsRun([]float64{120}, []float64{120}, nil)
	old.Results[0].Repeat, cur.Results[0].Repeat = 0, 0
	if _, _, ok := Significance(&cur.Results[0], &old.Results[0], "tps"); ok {
		t.Error("significance without repeats")
	}
}

// TestBenchfmt: golang.org/x/perf/benchfmt (benchstat's parser) reads
// every line back: names with the server and matrix vars, every repeat,
// the values in their units.
func TestBenchfmt(t *testing.T) {
	run := repeatsRun([]float64{100, 110, 90}, []float64{50, 55, 45}, map[string]string{"payload": "1KiB"})
	run.Plan.Matrix = []result.MatrixVar{{Name: "payload", Values: []string{"1KiB"}}}
	run.Host.CPUIdle = "haltpoll, polls up to 200µs before halting"
	run.Results = append(run.Results, result.Result{Server: "nbio", Phase: "echo", Kind: "echo", OK: false})
	run.Results = append(run.Results, result.Result{Server: "gws", Phase: "connect", Kind: "connect", OK: true,
		Metrics: metrics.Values{"tps": 2000.0, "success": int64(10)}})
	var buf bytes.Buffer
	if err := Benchfmt(&buf, run); err != nil {
		t.Fatal(err)
	}
	r := benchfmt.NewReader(&buf, "new.txt")
	var got, units []string
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			v, _ := rec.Value("msgs/s")
			if string(rec.Name.Full()) == "Echo/server=gws/payload=1KiB" && rec.Iters != 1000 {
				t.Errorf("iters %d", rec.Iters)
			}
			got = append(got, string(rec.Name.Full())+" "+benchNumber(v))
			if c := rec.GetConfig("wsplan-cpuidle"); c != run.Host.CPUIdle {
				t.Errorf("wsplan-cpuidle %q, want %q", c, run.Host.CPUIdle)
			}
		case *benchfmt.UnitMetadata:
			units = append(units, rec.Unit+" "+rec.Value)
		case *benchfmt.SyntaxError:
			t.Errorf("syntax error: %v", rec)
		}
	}
	want := []string{
		"Echo/server=gws/payload=1KiB 100", "Echo/server=gorilla/payload=1KiB 50",
		"Echo/server=gws/payload=1KiB 110", "Echo/server=gorilla/payload=1KiB 55",
		"Echo/server=gws/payload=1KiB 90", "Echo/server=gorilla/payload=1KiB 45",
		"Connect/server=gws 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("read back:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The kinds' message rates, the figures every kind may have, then
	// connection rates: as before the kinds declared their units.
	wantUnits := []string{"msgs/s higher", "recv/s higher", "p50-sec lower", "p99-sec lower", "p999-sec lower", // the reader tidies ns to sec
		"server-cpu-s/1M lower", "client-cpu-s/1M lower", "B/conn lower", "conns/s higher"}
	if !slices.Equal(units, wantUnits) {
		t.Errorf("Unit lines %q, want %q", units, wantUnits)
	}
}

// TestCompact: a table wider than the terminal gives way to the compact
// view and the line saying where the full tables are; a wide enough one
// is printed in full.
func TestCompact(t *testing.T) {
	run := repeatsRun([]float64{100, 110, 90}, []float64{50, 55, 45}, map[string]string{"payload": "64"})
	for _, tc := range []struct {
		width       int
		wantCompact bool
	}{{80, true}, {0, false}, {10000, false}} {
		var buf bytes.Buffer
		compact, err := TablesFit(&buf, run, nil, FormatMarkdown, tc.width, "full tables: elsewhere")
		if err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if compact != tc.wantCompact || strings.Contains(out, "full tables: elsewhere") != tc.wantCompact {
			t.Errorf("width %d: compact=%v\n%s", tc.width, compact, out)
		}
		if compact {
			if w := Width(strings.TrimSuffix(out, "full tables: elsewhere\n\n")); w > tc.width {
				t.Errorf("compact view is %d wide:\n%s", w, out)
			}
			if !strings.Contains(out, "| gws payload=64     | 100 ±10% | 100.00us ±10% | client-bound |") {
				t.Errorf("compact rows:\n%s", out)
			}
		}
	}
	// The widest row a compact view of ci.yaml has: the longest preset's
	// name, an echo's figures with both CPU figures, client-bound.
	wide := &result.Run{Results: []result.Result{{Server: "nbio_nonblocking", Phase: "echo", Kind: "echo", OK: true,
		Metrics: metrics.Values{"tps": 71182.0, metrics.P50: 6070 * time.Microsecond, metrics.P99: 11090 * time.Microsecond,
			metrics.ServerCPUPer1M: 14.0, metrics.ClientCPUPer1M: 13.5, metrics.ClientBound: true}}}}
	var buf bytes.Buffer
	if err := Compact(&buf, wide, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	if w := Width(buf.String()); w > 80 {
		t.Errorf("compact view of a client-bound echo row is %d wide:\n%s", w, buf.String())
	}
}

// TestJUnitRepeatsMatrix: JUnit has one case per (combination, server,
// phase), the median, named with its combination.
func TestJUnitRepeatsMatrix(t *testing.T) {
	run := matrixRun()
	run.Assertions = []result.Assertion{{Server: "gws", Phase: "echo", Expr: "tps > 0", Pass: true, Vars: map[string]string{"payload": "64"}}}
	var buf bytes.Buffer
	if err := JUnit(&buf, run); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if n := strings.Count(out, "<testcase "); n != 7 {
		t.Errorf("%d test cases, want 3 payloads × 2 servers + 1 assertion:\n%s", n, out)
	}
	for _, s := range []string{`name="echo [payload=16KiB]"`, `name="echo [payload=64]: tps &gt; 0"`} {
		if !strings.Contains(out, s) {
			t.Errorf("no %s in:\n%s", s, out)
		}
	}
}
