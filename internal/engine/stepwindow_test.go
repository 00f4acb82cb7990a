package engine

import (
	"os"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/scenarios"
)

// Each Env.Window call samples a window of its own and writes the figures a
// phase's row gets: the common metrics and, given the rate kind's
// efficiency, its EER and CPU per million.
func TestStepWindow(t *testing.T) {
	p := &plan.Plan{}
	p.Defaults.Sample = 0 // procstat's default interval
	e := &runner{o: Options{Layout: Layout{ServerCPUs: []int{0}, ClientCPUs: []int{1}}}, plan: p, run: &result.Run{}}
	window := e.stepWindow(resources{how: result.ResourcesTree, pid: os.Getpid()}, nil) // this process plays the server (and is the client)
	k, _ := scenarios.Lookup("rate")
	for step := range 2 {
		stop := window()
		burn(50 * time.Millisecond)
		m := metrics.Values{"recv_rate": 1000.0, "recv": int64(1000)}
		stop(m, k.Efficiency, nil)
		for _, d := range metrics.Common {
			if _, ok := m[d.Name]; !ok {
				t.Errorf("step %d: %s not written", step, d.Name)
			}
		}
		if m.Float(metrics.CPUAvg) <= 0 || m.Float(metrics.ClientCPUAvg) <= 0 || m.Float(metrics.ServerCPUSecs) <= 0 || m.Float(metrics.ServerCPUSecs) > 1 {
			t.Errorf("step %d: CPU %v", step, m)
		}
		if _, ok := m["echo_eer"]; !ok || m.Float(metrics.ServerCPUPer1M) <= 0 {
			t.Errorf("step %d: efficiency not written: %v", step, m)
		}
	}
}

// TestWindowPinned: a window knows the server's cores (server_cpus, and
// so server_bound) only for a server wsplan started and pinned.
func TestWindowPinned(t *testing.T) {
	e := &runner{o: Options{Layout: Layout{ServerCPUs: []int{0, 2}, ClientCPUs: []int{1}}}, plan: &plan.Plan{}, run: &result.Run{}}
	for how, want := range map[string]int{result.ResourcesTree: 2, result.ResourcesPID: 0, result.ResourcesMetrics: 0, result.ResourcesNone: 0} {
		w := e.newWindow(resources{how: how, pid: os.Getpid(), url: "http://127.0.0.1:1/metrics"}, nil)
		if w.pinned != want {
			t.Errorf("%s: pinned %d, want %d", how, w.pinned, want)
		}
	}
}

// burn spins the CPU for d.
func burn(d time.Duration) {
	x := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		x++
	}
	_ = x // the loop's work is the point
}
