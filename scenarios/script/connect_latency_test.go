package script

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/jsonrpc"
	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/units"
)

// TestConnectLatencyWithoutGreeting: a protocol without a greeting
// (JSON-RPC) times a script's users' connections from dial start to the
// 101, as the connect phase times them (internal/client's test of the
// same name checks that half, and raw connections).
func TestConnectLatencyWithoutGreeting(t *testing.T) {
	s := &prototest.RPCServer{}
	c := clienttest.NewClient(t, client.Options{Targets: []string{s.Start(t)}, Loops: 2, Protocol: client.ProtocolOptions{Name: jsonrpc.Name}})
	r, err := c.Run(t.Context(), &Params{Steps: steps(t, "steps:\n  - call: {method: sum, params: '[1, 2]', as: sum}\n"),
		Users: 10, Iterations: 1, Concurrency: 10, Timeout: units.Duration(5 * time.Second), ConnectTimeout: units.Duration(5 * time.Second), Drain: units.Duration(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sr := r.(*Result)
	prototest.CheckConnectLatency(t, "script", sr.Connect, sr.Finished, 10, sr.Used)
}
