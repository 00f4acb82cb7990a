package report

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// benchMetrics are the figures Benchfmt writes beside each kind's
// throughput (its Throughput.Bench unit), with their units. A unit is one
// word; benchstat prints one table per unit.
var benchMetrics = []benchMetric{
	{metrics.P50, "p50-ns", false},
	{metrics.P99, "p99-ns", false},
	{metrics.P999, "p999-ns", false},
	{metrics.ServerCPUPer1M, "server-cpu-s/1M", false},
	{metrics.ClientCPUPer1M, "client-cpu-s/1M", false},
	{metrics.MemPerConn, "B/conn", false},
}

// benchMetric is one figure of a benchmark line.
type benchMetric struct {
	metric, unit string
	higher       bool // more is better
}

// benchUnits are the units of a benchmark file's lines: the kinds'
// message rates (in kind order), benchMetrics, then their other rates
// (connections).
func benchUnits() []benchMetric {
	var msgs, others []benchMetric
	seen := map[string]bool{}
	for _, k := range scenarios.Kinds() {
		t := k.Throughput
		if t.Bench == "" || seen[t.Bench] {
			continue
		}
		seen[t.Bench] = true
		if t.Messages {
			msgs = append(msgs, benchMetric{t.Metric, t.Bench, true})
		} else {
			others = append(others, benchMetric{t.Metric, t.Bench, true})
		}
	}
	return append(append(msgs, benchMetrics...), others...)
}

var benchUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.+-]`)

// BenchName is a result's benchmark name: "BenchmarkEcho/server=gws",
// then each matrix var of the run ("/payload=1KiB"), in the order names
// gives.
func BenchName(r *result.Result, names []string) string {
	ph := []rune(benchUnsafe.ReplaceAllString(r.Phase, "_"))
	if len(ph) > 0 {
		ph[0] = unicode.ToUpper(ph[0])
	}
	s := "Benchmark" + string(ph) + "/server=" + benchUnsafe.ReplaceAllString(r.Server, "_")
	for _, n := range names {
		if v, ok := r.Vars[n]; ok {
			s += "/" + benchUnsafe.ReplaceAllString(n, "_") + "=" + benchUnsafe.ReplaceAllString(v, "_")
		}
	}
	return s
}

// Benchfmt writes a run in the Go benchmark format
// (golang.org/x/perf/benchfmt), one line per measured result, every repeat
// included, so `benchstat old.txt new.txt` compares two runs as it does two
// `go test -bench -count N` outputs:
//
//	goos: linux
//	cpu: AMD EPYC 7B13
//	wsplan-plan: ci
//	wsplan-cpuidle: haltpoll, polls up to 200µs before halting
//	Unit msgs/s better=higher
//	BenchmarkEcho/server=gws/payload=1KiB  20000  41234 msgs/s  812345 p99-ns  ...
//
// The iteration count is what the kind's throughput counts
// (Throughput.Count: echoes, pongs, connections received intact; else 1).
// Each line carries the kind's throughput in its Throughput.Bench unit
// (echo and ping msgs/s, connect conns/s, rate recv/s), then the figures
// of benchMetrics the phase has: p50/p99/p999 in ns, server and client
// CPU-seconds per million messages, memory per connection. Failed results
// are left out (a sample shorter by one).
func Benchfmt(w io.Writer, run *result.Run) error {
	ew := &errWriter{w: w}
	ew.printf("goos: linux\n")
	if run.Host.CPUModel != "" {
		ew.printf("cpu: %s\n", oneLine(run.Host.CPUModel))
	}
	if run.Plan.Name != "" {
		ew.printf("wsplan-plan: %s\n", oneLine(run.Plan.Name))
	}
	if run.Host.CPUIdle != "" {
		// benchstat prints configuration that differs between its inputs:
		// runs on hosts whose idle CPUs wait differently are told apart.
		ew.printf("wsplan-cpuidle: %s\n", oneLine(run.Host.CPUIdle))
	}
	if run.Wsplan != nil {
		ew.printf("wsplan-version: %s\n", oneLine(run.Wsplan.String()))
	}
	for _, m := range benchUnits() {
		better := "lower"
		if m.higher {
			better = "higher"
		}
		ew.printf("Unit %s better=%s\n", m.unit, better)
	}
	names := run.MatrixNames()
	for i := range run.Results {
		r := &run.Results[i]
		if !r.OK {
			continue
		}
		k, _ := scenarios.Lookup(r.Kind)
		figures := benchMetrics
		if t := k.Throughput; t.Bench != "" {
			figures = append([]benchMetric{{t.Metric, t.Bench, true}}, benchMetrics...)
		}
		var vals []string
		for _, m := range figures {
			if _, ok := r.Metrics[m.metric]; ok {
				vals = append(vals, fmt.Sprintf("%s %s", benchNumber(r.Metrics.Float(m.metric)), m.unit))
			}
		}
		if len(vals) == 0 {
			continue
		}
		iters := int64(1)
		if k.Throughput.Count != "" {
			iters = max(r.Metrics.Int(k.Throughput.Count), 1)
		}
		ew.printf("%s\t%d\t%s\n", BenchName(r, names), iters, strings.Join(vals, "\t"))
	}
	return ew.err
}

// benchNumber writes a value without exponent for ordinary magnitudes.
func benchNumber(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.6g", f)
}
