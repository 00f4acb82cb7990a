package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/metrics"
)

// TestKeptUp: the side named from the CPU each side wanted while sending
// was behind (used, and waited for), against its capacity. The happy half
// names a side; the sad half names none that was not saturated, and never
// says "the client or the server", nor clears a server whose CPU or cores
// are unknown.
func TestKeptUp(t *testing.T) {
	fig := func(server, client float64, pinned, cores int64) metrics.Values {
		m := metrics.Values{metrics.ClientCPUBehind: client, metrics.ClientCores: cores, metrics.ServerCPUs: pinned, metrics.Behind: 2 * time.Second}
		if server >= 0 {
			m[metrics.CPUBehind] = server
		}
		return m
	}
	waits := func(m metrics.Values, server, client float64) metrics.Values {
		m[metrics.CPUWaitBehind], m[metrics.ClientCPUWaitBehind] = server, client
		return m
	}
	cases := []struct {
		name string
		m    metrics.Values
		side side
		want string
	}{
		{"server saturated", fig(99, 40, 1, 1), sideServer,
			"the server could not keep up (CPU 99% of 1 core while behind; client 40% of 1 core)"},
		{"server on 2 cores", fig(190, 70, 2, 1), sideServer,
			"the server could not keep up (CPU 190% of 2 cores while behind; client 70% of 1 core)"},
		{"client saturated", fig(41, 98, 1, 1), sideClient,
			"the client could not keep up (CPU 98% of 1 core while behind; server 41% of 1 core)"},
		{"client saturated, server not measured", fig(-1, 95, 0, 1), sideClient,
			"the client could not keep up (CPU 95% of 1 core while behind; the server's CPU is not measured)"},
		{"both saturated, the server more", fig(100, 92, 1, 1), sideServer,
			"the server could not keep up (CPU 100% of 1 core while behind; client 92% of 1 core)"},
		{"both saturated, the client within 5 points", fig(96, 93, 1, 1), sideClient,
			"the client could not keep up (CPU 93% of 1 core while behind; server 96% of 1 core)"},
		{"server waited for CPUs others held", waits(fig(29, 23, 1, 1), 66, 2), sideServer,
			"the server could not keep up (CPU 29% (+66% waiting for a CPU) of 1 core while behind; client 23% of 1 core): other work held its CPUs"},
		{"client waited for CPUs others held", waits(fig(20, 40, 1, 1), 0, 55), sideClient,
			"the client could not keep up (CPU 40% (+55% waiting for a CPU) of 1 core while behind; server 20% of 1 core): other work held its CPUs"},
		{"never behind: over the sending time", func() metrics.Values { m := fig(99, 40, 1, 1); m[metrics.Behind] = time.Duration(0); return m }(), sideServer,
			"the server could not keep up (CPU 99% of 1 core while sending; client 40% of 1 core)"},

		{"neither saturated", fig(55, 40, 1, 1), sideNeither,
			"neither side was CPU-bound while behind (server 55% of 1 core, client 40% of 1 core): the network, the kernel, or a limit of the server's other than CPU"},
		{"one busy core of four", fig(99, 40, 4, 1), sideNeither,
			"neither side was CPU-bound while behind (server 99% of 4 cores, client 40% of 1 core): the network, the kernel, or a limit of the server's other than CPU (it kept about one of its 4 cores busy: one thread?)"},
		{"client at 80% of 2 cores", fig(20, 160, 1, 2), sideNeither,
			"neither side was CPU-bound while behind (server 20% of 1 core, client 160% of 2 cores): the network, the kernel, or a limit of the server's other than CPU"},
		{"waiting, not enough to matter", waits(fig(30, 40, 1, 1), 20, 3), sideNeither,
			"neither side was CPU-bound while behind (server 30% (+20% waiting for a CPU) of 1 core, client 40% of 1 core): the network, the kernel, or a limit of the server's other than CPU"},
		{"server's cores unknown (pid:)", fig(150, 40, 0, 1), sideNotClient,
			"the client was not CPU-bound while behind (CPU 40% of 1 core; server 150%, its cores not known): the server, the network or the kernel could not keep up"},
		{"server not measured (url:)", fig(-1, 40, 0, 1), sideNotClient,
			"the client was not CPU-bound while behind (CPU 40% of 1 core; the server's CPU is not measured): the server, the network or the kernel could not keep up"},
		{"no figures (no engine)", nil, sideUnknown,
			"who could not keep up is not known: no CPU was sampled while sending"},
		{"window figures only", metrics.Values{metrics.CPUAvg: 99.0, metrics.ServerBound: true}, sideUnknown,
			"who could not keep up is not known: no CPU was sampled while sending"},
	}
	for _, c := range cases {
		side, why := whoBehind(c.m)
		if side != c.side || why != c.want {
			t.Errorf("%s: %d %q\nwant %d %q", c.name, side, why, c.side, c.want)
		}
		if KeptUp(c.m) != why || strings.Contains(why, "the client or the server") {
			t.Errorf("%s: KeptUp %q", c.name, KeptUp(c.m))
		}
	}
}
