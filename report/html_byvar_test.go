package report

import (
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// matrixRun is an echo phase over payload × 2 servers × 2 repeats.
func matrixRun() *result.Run {
	run := &result.Run{Schema: result.Schema, Plan: result.PlanInfo{Name: "payloads", Count: 2,
		Matrix: []result.MatrixVar{{Name: "payload", Values: []string{"64", "1KiB", "16KiB"}}}}}
	for pi, payload := range []string{"64", "1KiB", "16KiB"} {
		for rep := 1; rep <= 2; rep++ {
			for si, srv := range []string{"gws", "gorilla"} {
				tps := float64(30000-10000*pi-5000*si) + float64(rep)*100
				run.Results = append(run.Results, result.Result{Server: srv, Framework: srv, Phase: "echo", Kind: "echo", OK: true,
					Repeat: rep, Vars: map[string]string{"payload": payload},
					Metrics: metrics.Values{"tps": tps, "p50": time.Millisecond, "p99": 5 * time.Millisecond, "success": int64(1000),
						"server_cpu_per_1m": 10.0, "client_cpu_per_1m": 8.0}})
			}
		}
	}
	return run
}

// TestChartByVar: a matrix run gets a chart of throughput by payload, a
// line per server through the medians, in the matrix's order; the other
// charts have a category per (server, payload).
func TestChartByVar(t *testing.T) {
	runs := []*result.Run{result.Collapse(matrixRun())}
	model := chartModel(runs, runLabels(runs))
	if len(model) != 1 {
		t.Fatalf("%d sections", len(model))
	}
	c := model[0].Charts[0]
	if c.Type != chartByVar || c.XLabel != "payload" || strings.Join(c.Categories, ",") != "64,1KiB,16KiB" {
		t.Fatalf("first chart %+v", c)
	}
	got := map[string][][2]float64{}
	for _, s := range c.Series {
		got[s.Name] = s.Points
	}
	want := map[string][][2]float64{
		"gws":     {{0, 30150}, {1, 20150}, {2, 10150}},
		"gorilla": {{0, 25150}, {1, 15150}, {2, 5150}},
	}
	for name, w := range want {
		if g := got[name]; len(g) != len(w) || g[0] != w[0] || g[1] != w[1] || g[2] != w[2] {
			t.Errorf("%s: %v, want %v", name, g, w)
		}
	}
	if bars := model[0].Charts[1]; bars.Type != chartBars || len(bars.Categories) != 6 || bars.Categories[0] != "gws payload=64" ||
		!strings.Contains(bars.Note, "medians of 2 repeats") {
		t.Errorf("bars categories %v, note %q", bars.Categories, bars.Note)
	}
	var md strings.Builder
	if err := Tables(&md, matrixRun(), nil, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	if out := md.String(); !strings.Contains(out, "| payload | Framework |") || !strings.Contains(out, "| 16KiB   | gorilla   | 5150 ±1% |") {
		t.Errorf("grouped table:\n%s", out)
	}
}
