package script

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/jsonrpc"
	"github.com/wsplan/wsplan/internal/units"
)

// TestConnectLatencyWithoutGreeting: a protocol without a greeting
// (JSON-RPC) times a script's users' connections from dial start to the
// 101, as the connect phase times them (internal/client's test of the
// same name checks that half, and raw connections).
func TestConnectLatencyWithoutGreeting(t *testing.T) {
	s := &rpcServer{}
	c := clienttest.NewClient(t, client.Options{Targets: []string{s.start(t)}, Loops: 2, Protocol: client.ProtocolOptions{Name: jsonrpc.Name}})
	r, err := c.Run(t.Context(), &Params{Steps: steps(t, "steps:\n  - call: {method: sum, params: '[1, 2]', as: sum}\n"),
		Users: 10, Iterations: 1, Concurrency: 10, Timeout: units.Duration(5 * time.Second), ConnectTimeout: units.Duration(5 * time.Second), Drain: units.Duration(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sr := r.(*Result)
	checkConnectLatency(t, "script", sr.Connect, sr.Finished, 10, sr.Used)
}

// checkConnectLatency: n handshakes timed, each > 0 and within the
// phase's wall time.
func checkConnectLatency(t *testing.T, what string, h client.Hist, opened, n int64, used time.Duration) {
	t.Helper()
	if opened != n || h.TotalCount() != n {
		t.Fatalf("%s: %d opened, %d timed; want %d", what, opened, h.TotalCount(), n)
	}
	p50, top := h.ValueAtQuantile(50), h.Max()
	if p50 <= 0 || h.Min() <= 0 || time.Duration(top) > used {
		t.Errorf("%s: connect min %d p50 %d max %d ns, phase %v; want 0 < min ≤ max ≤ phase", what, h.Min(), p50, top, used)
	}
}
