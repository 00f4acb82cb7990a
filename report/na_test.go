package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/result"
)

// A url: server without pid:, pid_file: or metrics_url: has no server
// CPU or memory: its cells read n/a, not 0 and not "-"; a server that was
// measured keeps its figures in the same table.
func TestTablesNotAvailable(t *testing.T) {
	echo := func(server, how string, m metrics.Values) result.Result {
		return result.Result{Server: server, Framework: "url", Phase: "echo", Kind: "echo", OK: true, ServerResources: how, Metrics: m}
	}
	base := func() metrics.Values {
		return metrics.Values{"tps": 1000.0, "success": int64(1000), "p50": time.Millisecond, "client_cpu_avg": 40.0, "client_cpu_per_1m": 2.0}
	}
	measured := base()
	measured[metrics.CPUAvg], measured[metrics.MemMax], measured["eer"] = 55.0, int64(10<<20), 18.18
	run := &result.Run{Results: []result.Result{
		echo("remote", result.ResourcesNone, base()),
		echo("local", result.ResourcesPID, measured),
	}}
	var b bytes.Buffer
	if err := Tables(&b, run, nil, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	var remote, local string
	for _, line := range strings.Split(b.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "| remote"):
			remote = line
		case strings.HasPrefix(line, "| local"):
			local = line
		}
	}
	if n := strings.Count(remote, "n/a"); n < 7 { // EER, CPU min/avg/max, MEM min/avg/max
		t.Errorf("remote row has %d n/a cells, want the EER and the six CPU and MEM cells:\n%s", n, b.String())
	}
	if strings.Contains(remote, "0.00%") {
		t.Errorf("remote row shows a 0 CPU instead of n/a: %s", remote)
	}
	if strings.Contains(local, "n/a") || !strings.Contains(local, "55.00%") {
		t.Errorf("measured row: %s", local)
	}
}

// A search against a server whose resources are not measured shows n/a,
// not 0%, as each step's server CPU.
func TestStepsNotAvailable(t *testing.T) {
	steps := []result.Step{{Target: 1000, Conns: 10, Achieved: 1000, ClientCPU: 12, Verdict: "pass"}}
	run := &result.Run{Results: []result.Result{
		{Server: "remote", Framework: "url", Phase: "search", Kind: "search", OK: true, ServerResources: result.ResourcesNone, Metrics: metrics.Values{}, Steps: steps},
		{Server: "local", Framework: "url", Phase: "search", Kind: "search", OK: true, ServerResources: result.ResourcesPID, Metrics: metrics.Values{}, Steps: steps},
	}}
	var b bytes.Buffer
	if err := Tables(&b, run, nil, FormatMarkdown); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	remote := out[strings.Index(out, "Steps: remote"):strings.Index(out, "Steps: local")]
	local := out[strings.Index(out, "Steps: local"):]
	if !strings.Contains(remote, "| n/a ") || strings.Contains(remote, "0.00%") {
		t.Errorf("remote steps: want n/a server CPU:\n%s", remote)
	}
	if strings.Contains(local, "n/a") || !strings.Contains(local, "0.00%") {
		t.Errorf("local steps: want the measured 0.00%%:\n%s", local)
	}
}
