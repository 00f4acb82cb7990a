package client

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/proto/jsonrpc"

	"github.com/wsplan/wsplan/internal/units"
)

// TestConnectLatencyWithoutGreeting: a protocol without a greeting
// (JSON-RPC) times its connections from dial start to the 101, as raw
// connections are timed; a raw connection's figure is the same measure.
// (scenarios/script's test of the same name checks a script's users.)
func TestConnectLatencyWithoutGreeting(t *testing.T) {
	s := &rpcServer{}
	addr := s.start(t)
	for _, proto := range []string{jsonrpc.Name, ""} {
		t.Run(proto, func(t *testing.T) {
			c := newClient(t, Options{Targets: []string{addr}, Loops: 2, Protocol: ProtocolOptions{Name: proto}})
			res, err := c.Connect(t.Context(), ConnectParams{Connections: 20, Concurrency: 20, Timeout: units.Duration(5 * time.Second)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkConnectLatency(t, "connect phase", res.Latency, res.Success, 20, res.Used)
		})
	}
}

// checkConnectLatency: n handshakes timed, each > 0 and within the
// phase's wall time.
func checkConnectLatency(t *testing.T, what string, h Hist, opened, n int64, used time.Duration) {
	t.Helper()
	if opened != n || h.TotalCount() != n {
		t.Fatalf("%s: %d opened, %d timed; want %d", what, opened, h.TotalCount(), n)
	}
	p50, top := h.ValueAtQuantile(50), h.Max()
	if p50 <= 0 || h.Min() <= 0 || time.Duration(top) > used {
		t.Errorf("%s: connect min %d p50 %d max %d ns, phase %v; want 0 < min ≤ max ≤ phase", what, h.Min(), p50, top, used)
	}
}
