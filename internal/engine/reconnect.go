package engine

import (
	"fmt"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/metrics"
	"github.com/wsplan/wsplan/scenarios"
)

// reconnectReporter is a Driver that tells what its reconnectors did over
// the last phase (client.Client, shard.Group).
type reconnectReporter interface {
	Reconnects() client.ReconnectStats
}

// reconnectMetrics writes the phase's reconnect figures (metrics.Reconnect)
// when the plan has a reconnect policy, and returns a warning when some
// dropped connections were not back by the phase's end ("" otherwise).
func (e *runner) reconnectMetrics(m metrics.Values, drv Driver) string {
	if e.plan.Client.ReconnectPolicy() == nil {
		return ""
	}
	rr, ok := drv.(reconnectReporter)
	if !ok {
		return ""
	}
	s := rr.Reconnects()
	m[metrics.Drops], m[metrics.Reconnects], m[metrics.ReconnectFail], m[metrics.NotBack] = s.Drops, s.Reconnects, s.Failed, s.Pending
	m[metrics.ReconnectPeak] = s.Peak()
	if h := s.Latency.Histogram; h != nil && h.TotalCount() > 0 {
		m[metrics.ReconnectP50] = time.Duration(h.ValueAtQuantile(50))
		m[metrics.ReconnectP99] = time.Duration(h.ValueAtQuantile(99))
		m[metrics.ReconnectMax] = time.Duration(h.Max())
	}
	if s.FirstDrop > 0 && s.FirstBack > 0 {
		m[metrics.Downtime] = time.Duration(max(0, s.FirstBack-s.FirstDrop))
		m[metrics.AllBack] = time.Duration(max(0, s.LastBack-s.FirstDrop))
	}
	if s.Pending > 0 {
		return fmt.Sprintf("%d of %d dropped connections not back when the phase ended (%d attempts failed: %s)", s.Pending, s.Drops, s.Failed, scenarios.ErrorSummary(s.Errors))
	}
	return ""
}
