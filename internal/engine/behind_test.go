package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/scenarios"
)

// cpuSeries is a synthetic CPU series from t0: one reading every 500 ms,
// the process at pct[i] percent of a core in the i-th interval.
func cpuSeries(t0 time.Time, pct ...float64) procstat.Series {
	s := procstat.Series{{At: t0}}
	var cpu time.Duration
	for i, p := range pct {
		cpu += time.Duration(p / 100 * float64(500*time.Millisecond))
		s = append(s, procstat.CPUPoint{At: t0.Add(time.Duration(i+1) * 500 * time.Millisecond), CPU: cpu})
	}
	return s
}

// waiting adds a run-queue wait to s: pct[i] percent of a core in its
// i-th interval.
func waiting(s procstat.Series, pct ...float64) procstat.Series {
	s = append(procstat.Series(nil), s...)
	var wait time.Duration
	for i, p := range pct {
		wait += time.Duration(p / 100 * float64(500*time.Millisecond))
		s[i+1].Wait = wait
	}
	return s
}

// windowOf is a window's summary of s: its average and its series, with
// its waits when any was read.
func windowOf(s procstat.Series) *procstat.Summary {
	wall := s[len(s)-1].At.Sub(s[0].At)
	cpu := s[len(s)-1].CPU - s[0].CPU
	return &procstat.Summary{CPUAvg: 100 * cpu.Seconds() / wall.Seconds(), CPUSeconds: cpu.Seconds(), Wall: wall, CPU: s, Waits: s[len(s)-1].Wait > 0}
}

// TestBehindSide: who could not keep up is judged from the samples taken
// while sending was behind, not from the window's average. Each case is
// a 5 s window: sending for 3 s, behind from 1 s to 3 s, then a 2 s
// drain. The happy half names the side saturated while behind, though
// the drain pulls its window average far below the mark; the sad half
// names no side that was busy only outside those seconds (its window
// average above the mark), and says what it does not know. In every case
// the whole window would have said otherwise.
func TestBehindSide(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	behind := []scenarios.Span{{From: t0.Add(time.Second), To: t0.Add(3 * time.Second)}}
	idle := cpuSeries(t0, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5)
	cases := []struct {
		name           string
		server, client procstat.Series // nil server: not measured
		pinned, usable int
		spans          []scenarios.Span
		want           string
	}{
		{"server saturated while behind",
			cpuSeries(t0, 40, 40, 100, 100, 99, 99, 0, 0, 0, 0), cpuSeries(t0, 30, 30, 35, 35, 35, 35, 2, 2, 2, 2), 1, 1, behind,
			"the server could not keep up (CPU 100% of 1 core while behind; client 35% of 1 core)"},
		{"client saturated while behind",
			cpuSeries(t0, 30, 30, 40, 40, 40, 40, 10, 10, 0, 0), cpuSeries(t0, 60, 60, 100, 100, 98, 98, 5, 5, 0, 0), 1, 1, behind,
			"the client could not keep up (CPU 99% of 1 core while behind; server 40% of 1 core)"},
		{"server starved while behind",
			waiting(cpuSeries(t0, 40, 40, 30, 30, 30, 30, 0, 0, 0, 0), 0, 0, 65, 65, 65, 65, 0, 0, 0, 0), cpuSeries(t0, 30, 30, 25, 25, 25, 25, 0, 0, 0, 0), 1, 1, behind,
			"the server could not keep up (CPU 30% (+65% waiting for a CPU) of 1 core while behind; client 25% of 1 core): other work held its CPUs"},
		{"server on 2 cores",
			cpuSeries(t0, 90, 90, 190, 190, 190, 190, 0, 0, 0, 0), cpuSeries(t0, 30, 30, 30, 30, 30, 30, 0, 0, 0, 0), 2, 1, behind,
			"the server could not keep up (CPU 190% of 2 cores while behind; client 30% of 1 core)"},

		{"server busy but not while behind",
			cpuSeries(t0, 100, 100, 80, 80, 80, 80, 100, 100, 100, 100), cpuSeries(t0, 30, 30, 30, 30, 30, 30, 0, 0, 0, 0), 1, 1, behind,
			"neither side was CPU-bound while behind (server 80% of 1 core, client 30% of 1 core): the network, the kernel, or a limit of the server's other than CPU"},
		{"client busy but not while behind",
			idle, cpuSeries(t0, 100, 100, 80, 80, 80, 80, 100, 100, 100, 100), 1, 1, behind,
			"neither side was CPU-bound while behind (server 5% of 1 core, client 80% of 1 core): the network, the kernel, or a limit of the server's other than CPU"},
		{"server not measured",
			nil, cpuSeries(t0, 30, 30, 30, 30, 30, 30, 0, 0, 0, 0), 0, 1, behind,
			"the client was not CPU-bound while behind (CPU 30% of 1 core; the server's CPU is not measured): the server, the network or the kernel could not keep up"},
		{"spans outside the samples",
			idle, idle, 1, 1, []scenarios.Span{{From: t0.Add(time.Hour), To: t0.Add(time.Hour + time.Second)}},
			"neither side was CPU-bound while behind (server 0% of 1 core, client 0% of 1 core): the network, the kernel, or a limit of the server's other than CPU"},
	}
	for _, c := range cases {
		m := metrics.Values{metrics.ServerCPUs: int64(c.pinned), metrics.Behind: 2 * time.Second}
		sc := serverCost{pinned: c.pinned}
		if c.server != nil {
			sc.sum = windowOf(c.server)
		}
		cc := clientCost{sum: *windowOf(c.client), series: []procstat.Series{c.client}, waits: []bool{windowOf(c.client).Waits}}
		behindMetrics(m, c.spans, sc, cc, c.usable)
		if _, wait := m[metrics.CPUWaitBehind]; wait != (sc.sum != nil && sc.sum.Waits) {
			t.Errorf("%s: cpu_wait_behind written %v, want only where the server's wait was read", c.name, wait)
		}
		if got := scenarios.KeptUp(m); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		// The whole window (the drain included) says otherwise, or the
		// case proves nothing.
		if c.server != nil && c.client != nil && c.spans[0].From.Before(t0.Add(time.Hour)) {
			whole := metrics.Values{metrics.ServerCPUs: int64(c.pinned), metrics.Behind: 2 * time.Second}
			behindMetrics(whole, []scenarios.Span{{From: t0, To: t0.Add(5 * time.Second)}}, sc, cc, c.usable)
			if side := strings.Fields(scenarios.KeptUp(whole))[:2]; strings.HasPrefix(c.want, strings.Join(side, " ")) {
				t.Errorf("%s: the whole window says the same: %q", c.name, scenarios.KeptUp(whole))
			}
		}
		if strings.Contains(scenarios.KeptUp(m), "the client or the server") {
			t.Errorf("%s: names nobody", c.name)
		}
		// The Verdict column's flags name the side the note names.
		markBound(m)
		wantClient, wantServer := strings.HasPrefix(c.want, "the client could not"), strings.HasPrefix(c.want, "the server could not")
		if m.Bool(metrics.ClientBound) != wantClient || m.Bool(metrics.ServerBound) != wantServer {
			t.Errorf("%s: client_bound %v server_bound %v, want %v %v", c.name, m.Bool(metrics.ClientBound), m.Bool(metrics.ServerBound), wantClient, wantServer)
		}
	}
	// A phase that kept up (behind 0): the window's flags stand.
	kept := metrics.Values{metrics.ServerCPUs: int64(1), metrics.CPUBehind: 100.0, metrics.ClientCPUBehind: 20.0, metrics.ClientCores: int64(1)}
	markBound(kept)
	if kept.Bool(metrics.ServerBound) || kept.Bool(metrics.ClientBound) {
		t.Errorf("kept up: marked %v", kept)
	}
	// No spans (a kind without a timetable): nothing written.
	m := metrics.Values{}
	behindMetrics(m, nil, serverCost{sum: windowOf(idle), pinned: 1}, clientCost{series: []procstat.Series{idle}}, 1)
	if len(m) != 0 {
		t.Errorf("no spans: wrote %v", m)
	}
}

// TestBehindShards: local shards add their whole-phase average to this
// process's CPU over the spans, against the usable cores; remote shards
// are the client, on their own cores.
func TestBehindShards(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	spans := []scenarios.Span{{From: t0, To: t0.Add(time.Second)}}
	self := cpuSeries(t0, 10, 10)
	for _, c := range []struct {
		remote      bool
		cpu         float64
		cores       int64
		clientNamed bool
	}{
		{false, 10 + 95 + 90, 2, true},
		{true, 95 + 90, 4, false},
	} {
		cc := clientCost{series: []procstat.Series{self}, remote: c.remote}
		cc.shards = []shard.Cost{{Shard: "a", CPUAvg: 95, Usable: 2}, {Shard: "b", CPUAvg: 90, Usable: 2}}
		m := metrics.Values{}
		behindMetrics(m, spans, serverCost{}, cc, 2)
		if d := m.Float(metrics.ClientCPUBehind) - c.cpu; d > 0.01 || d < -0.01 || m.Int(metrics.ClientCores) != c.cores {
			t.Errorf("remote %v: client %v of %v cores, want %v of %v", c.remote, m[metrics.ClientCPUBehind], m[metrics.ClientCores], c.cpu, c.cores)
		}
		if got := strings.HasPrefix(scenarios.KeptUp(m), "the client could not keep up"); got != c.clientNamed {
			t.Errorf("remote %v: %q", c.remote, scenarios.KeptUp(m))
		}
	}
}

// TestBoundSharesAgree: the share at which KeptUp names a side is the
// window's client_bound and server_bound mark.
func TestBoundSharesAgree(t *testing.T) {
	for name, mark := range map[string]float64{metrics.ClientBound: ClientBoundThreshold, metrics.ServerBound: ServerBoundThreshold} {
		if mark != scenarios.BoundShare {
			t.Errorf("%s at %v, scenarios.BoundShare %v", name, mark, scenarios.BoundShare)
		}
	}
}
