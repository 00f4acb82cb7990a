package report

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// benchMetrics are the figures Benchfmt writes, with their units. A unit is
// one word; benchstat prints one table per unit.
var benchMetrics = []struct {
	metric, unit string
	higher       bool // more is better
}{
	{"tps", "msgs/s", true},
	{"recv_rate", "recv/s", true},
	{metrics.P50, "p50-ns", false},
	{metrics.P99, "p99-ns", false},
	{metrics.P999, "p999-ns", false},
	{metrics.ServerCPUPer1M, "server-cpu-s/1M", false},
	{metrics.ClientCPUPer1M, "client-cpu-s/1M", false},
	{"mem_per_conn", "B/conn", false},
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
// The iteration count is the phase's successful messages (success, else
// recv, else 1). Each line carries the figures of benchMetrics the phase
// has: tps as msgs/s (conns/s for connect), recv_rate, p50/p99/p999
// in ns, server and client CPU-seconds per million messages, memory per
// connection. Failed results are left out (a sample shorter by one).
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
	for _, m := range benchMetrics {
		better := "lower"
		if m.higher {
			better = "higher"
		}
		ew.printf("Unit %s better=%s\n", m.unit, better)
	}
	ew.printf("Unit conns/s better=higher\n")
	names := run.MatrixNames()
	for i := range run.Results {
		r := &run.Results[i]
		if !r.OK {
			continue
		}
		var vals []string
		for _, m := range benchMetrics {
			if _, ok := r.Metrics[m.metric]; !ok {
				continue
			}
			unit := m.unit
			if m.metric == "tps" && r.Kind == "connect" {
				unit = "conns/s"
			}
			vals = append(vals, fmt.Sprintf("%s %s", benchNumber(r.Metrics.Float(m.metric)), unit))
		}
		if len(vals) == 0 {
			continue
		}
		iters := r.Metrics.Int("success")
		if iters <= 0 {
			iters = r.Metrics.Int("recv")
		}
		ew.printf("%s\t%d\t%s\n", BenchName(r, names), max(iters, 1), strings.Join(vals, "\t"))
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
