package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/scenarios"
)

// TestRunRepeatsMatrix: --count 2 over a two-value matrix runs every
// server twice per combination, interleaved (gws gorilla gws gorilla), on
// a fresh server process each time (a log per repeat); the JSON keeps
// every repeat with its repeat number and combination, the tables show
// medians grouped by combination with the var column, and the assertions
// are checked once per (combination, server, phase) on the medians.
func TestRunRepeatsMatrix(t *testing.T) {
	testenv.Slow(t, "8 s: a matrix plan run three times through the CLI")
	t.Parallel()
	dir := writePlan(t, `
vars: {payload: 1024}
matrix: {payload: [64, 1KiB]}
servers: [{name: gws}, {name: gorilla}]
phases:
  - connect: {connections: 20}
  - echo: {total: 500, concurrency: 20, payload: ${payload}}
assert:
  - phase: echo
    expr: failed == 0 && len(repeats.tps) == 2 && (vars.payload == 64 || vars.payload == 1024)
`)
	r := startWsplan(t, dir, "run", "plan.yaml", "--count", "2", "--progress", "off", "--json", "r.json", "--benchfmt", "r.txt", "--out", "logs")
	if code := r.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, r.stderrText(), r.stdout.String())
	}
	run, err := result.ReadFile(filepath.Join(dir, "r.json"), scenarios.ResultDefs)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, x := range run.Results {
		if !x.OK {
			t.Errorf("%s/%s repeat %d failed: %s", x.Server, x.Phase, x.Repeat, x.Error)
		}
		if x.Phase == "echo" {
			order = append(order, x.Vars["payload"]+"/"+x.Server+"/"+string(rune('0'+x.Repeat)))
		}
	}
	want := "64/gws/1 64/gorilla/1 64/gws/2 64/gorilla/2 1KiB/gws/1 1KiB/gorilla/1 1KiB/gws/2 1KiB/gorilla/2"
	if strings.Join(order, " ") != want {
		t.Errorf("echo results in order %q, want %q", strings.Join(order, " "), want)
	}
	if run.Plan.Count != 2 || len(run.Plan.Matrix) != 1 || len(run.Assertions) != 4 {
		t.Errorf("count %d, matrix %v, %d assertions (want 2, payload, 4)", run.Plan.Count, run.Plan.Matrix, len(run.Assertions))
	}
	for _, a := range run.Assertions {
		if !a.Pass || a.Vars["payload"] == "" {
			t.Errorf("assertion %+v", a)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "server-*.log"))
	if len(logs) != 8 {
		t.Errorf("%d server logs, want one per combination × repeat × server (8): %v", len(logs), logs)
	}
	out := r.stdout.String()
	for _, s := range []string{"| payload | Framework |", "| 64      | gws ", "| 1KiB    | gorilla ", "medians of the repeats"} {
		if !strings.Contains(out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\nBenchmarkEcho/server=gws/payload=1KiB\t"); n != 2 {
		t.Errorf("benchfmt has %d lines of gws at 1KiB, want 2:\n%s", n, b)
	}
	assertNoLeftovers(t, dir)
}

// TestReportBenchfmt: `wsplan report RUN.json --benchfmt FILE` writes the
// run's every repeat in Go benchmark format, as `run --benchfmt` does.
func TestReportBenchfmt(t *testing.T) {
	dir := t.TempDir()
	run := &result.Run{Schema: result.Schema, Plan: result.PlanInfo{Name: "x", Count: 2}}
	for rep := 1; rep <= 2; rep++ {
		run.Results = append(run.Results, result.Result{Server: "gws", Phase: "echo", Kind: "echo", OK: true, Repeat: rep,
			Metrics: map[string]any{"tps": float64(1000 * rep), "success": int64(10)}})
	}
	if err := run.WriteFile(filepath.Join(dir, "r.json")); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := Main([]string{"report", filepath.Join(dir, "r.json"), "--benchfmt", filepath.Join(dir, "r.txt")}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"BenchmarkEcho/server=gws\t10\t1000 msgs/s\n", "BenchmarkEcho/server=gws\t10\t2000 msgs/s\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %q in:\n%s", want, b)
		}
	}
}
