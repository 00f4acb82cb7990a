package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
)

// TestRateShortfallNamesSide runs a rate phase through the engine against
// an in-process server that answers each message 20 ms late, one at a
// time per connection: a connection carries at most 50 messages a second
// of the 200 its timetable has due, so the client, its 16 messages in
// flight taken, falls behind with its CPU idle. The shortfall says the client was not CPU-bound while behind
// (the server, a url: target, is not measured), from the seconds it was
// behind (behind > 0, the drain left out), never "the client or the
// server" — or, on a host whose CPUs others hold, that the client waited
// for one.
func TestRateShortfallNamesSide(t *testing.T) {
	testenv.Slow(t, "2 s: a rate phase left behind its timetable")
	srv := testserver.Start(t, testserver.Options{Delay: 20 * time.Millisecond})
	body := fmt.Sprintf(`
servers: [{name: slow, url: "ws://%s/"}]
phases:
  - connect: {connections: 2, concurrency: 2}
  - rate: {duration: 2s, rate: 200, payload: 64, max_inflight: 16, drain: 1s}
`, srv.Addr())
	p, err := plan.LoadBytes("slow.yaml", []byte(body), plan.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(t.Context(), Options{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range run.Results {
		if r.Kind != "rate" {
			continue
		}
		found = true
		m := r.Metrics
		if !(m.Float(metrics.AchievedRate) < 0.9*m.Float(metrics.SendRate)) {
			t.Fatalf("no shortfall: achieved %v of %v", m[metrics.AchievedRate], m[metrics.SendRate])
		}
		if b := m.Dur(metrics.Behind); b < time.Second || b > m.Dur(metrics.DurationName) {
			t.Errorf("behind %v, want most of the %v sent, none of the drain", b, m.Dur(metrics.DurationName))
		}
		if _, ok := m[metrics.CPUBehind]; ok {
			t.Errorf("cpu_behind %v of a server that is not measured", m[metrics.CPUBehind])
		}
		cpu, ok := m[metrics.ClientCPUBehind].(float64)
		cores := m.Int(metrics.ClientCores)
		if !ok || cores < 1 || cpu >= 100*ClientBoundThreshold*float64(cores) {
			t.Errorf("client_cpu_behind %v of %v cores, want it measured and below the mark", m[metrics.ClientCPUBehind], cores)
		}
		// On a host whose CPUs others hold, the idle client may still have
		// waited for one most of the time: then it is named, and said so.
		want := []string{"the client was not CPU-bound while behind (CPU ", "the server's CPU is not measured): the server, the network or the kernel could not keep up"}
		if wanted := cpu + m.Float(metrics.ClientCPUWaitBehind); wanted >= 100*ClientBoundThreshold*float64(cores) {
			want = []string{"the client could not keep up (CPU ", "waiting for a CPU)", "the server's CPU is not measured): other work held its CPUs"}
		}
		w := strings.Join(r.Warnings, "\n")
		for _, x := range append(want, "rate shortfall: ") {
			if !strings.Contains(w, x) {
				t.Errorf("warnings do not name who could not keep up (no %q):\n%s", x, w)
			}
		}
		if strings.Contains(w, "the client or the server") {
			t.Errorf("warnings name nobody:\n%s", w)
		}
		t.Logf("behind %v; warnings:\n%s", m.Dur(metrics.Behind), w)
	}
	if !found {
		t.Fatalf("no rate row in %+v", run.Results)
	}
}
