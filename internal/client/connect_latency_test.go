package client

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/proto/jsonrpc"

	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/units"
)

// TestConnectLatencyWithoutGreeting: a protocol without a greeting
// (JSON-RPC) times its connections from dial start to the 101, as raw
// connections are timed; a raw connection's figure is the same measure.
// (scenarios/script's test of the same name checks a script's users.)
func TestConnectLatencyWithoutGreeting(t *testing.T) {
	s := &prototest.RPCServer{}
	addr := s.Start(t)
	for _, proto := range []string{jsonrpc.Name, ""} {
		t.Run(proto, func(t *testing.T) {
			c := newClient(t, Options{Targets: []string{addr}, Loops: 2, Protocol: ProtocolOptions{Name: proto}})
			res, err := c.Connect(t.Context(), ConnectParams{Connections: 20, Concurrency: 20, Timeout: units.Duration(5 * time.Second)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			prototest.CheckConnectLatency(t, "connect phase", res.Latency, res.Success, 20, res.Used)
		})
	}
}
