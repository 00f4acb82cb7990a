package engine

import (
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/internal/procstat"
	"github.com/wsplan/wsplan/scenarios"
)

// ClientBoundThreshold is the share of the client's usable CPU above which a
// result is flagged client_bound (when the server was not busier still):
// the client, not the server, set the pace.
const ClientBoundThreshold = 0.9

// ClientNearThreshold is the share above which a result carries a warning
// that the client came close to measuring itself.
const ClientNearThreshold = 0.8

// clientBound decides whether the client set the pace: its CPU (share of
// the cores it can use) reached ClientBoundThreshold and was not clearly
// below the server's share of its cores (then the server was the
// bottleneck, both being near saturation).
func clientBound(clientShare, serverShare float64) bool {
	return clientShare >= ClientBoundThreshold && clientShare >= serverShare-0.05
}

// efficiency fills a kind's EER and the CPU seconds each side spent per
// million messages: the figures that show whether the client could measure
// this server at all.
func efficiency(m metrics.Values, eff scenarios.Efficiency, server, client procstat.Summary) {
	rate, ok := m[eff.Rate].(float64)
	if !ok {
		return // the phase failed before it measured anything
	}
	m[eff.EER] = float64(0)
	if server.CPUAvg > 0 {
		m[eff.EER] = rate / server.CPUAvg
	}
	if n := m.Int(eff.Count); n > 0 {
		m["client_cpu_per_1m"] = client.CPUSeconds / float64(n) * 1e6
		m["server_cpu_per_1m"] = server.CPUSeconds / float64(n) * 1e6
	}
}
