package prototest

import (
	"testing"
	"time"
)

// Hist is what CheckConnectLatency reads of a latency histogram
// (internal/client.Hist), so this package need not import the client.
type Hist interface {
	TotalCount() int64
	Min() int64
	Max() int64
	ValueAtQuantile(q float64) int64
}

// CheckConnectLatency checks a phase's connect times: n handshakes
// opened and timed, each > 0 and within the phase's wall time used.
func CheckConnectLatency(t testing.TB, what string, h Hist, opened, n int64, used time.Duration) {
	t.Helper()
	if opened != n || h.TotalCount() != n {
		t.Fatalf("%s: %d opened, %d timed; want %d", what, opened, h.TotalCount(), n)
	}
	p50, top := h.ValueAtQuantile(50), h.Max()
	if p50 <= 0 || h.Min() <= 0 || time.Duration(top) > used {
		t.Errorf("%s: connect min %d p50 %d max %d ns, phase %v; want 0 < min ≤ max ≤ phase", what, h.Min(), p50, top, used)
	}
}
