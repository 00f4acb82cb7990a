package client

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/proto/jsonrpc"
	"github.com/wsplan/wsplan/internal/units"
)

// TestJSONRPCErrorAnswers: calls to a method the server does not have
// are error answers counted by code (-32601), the exchange not
// completed; the calls it has complete.
func TestJSONRPCErrorAnswers(t *testing.T) {
	s := &rpcServer{}
	c := newClient(t, Options{Targets: []string{s.start(t)}, Loops: 2, Protocol: ProtocolOptions{Name: jsonrpc.Name}})
	res, err := c.Run(t.Context(), &ScriptParams{Steps: steps(t, `
steps:
  - loop:
      count: 3
      steps:
        - call: {method: nosuch, as: nosuch}
        - call: {method: sum, params: '[1, 2]', as: sum}
  - call: {method: nosuch}
`), Users: 5, Iterations: 1, Concurrency: 5, Timeout: units.Duration(5 * time.Second), ConnectTimeout: units.Duration(5 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*ScriptResult)
	const why = "jsonrpc -32601"
	nosuch, sum := r.Exchanges["nosuch"], r.Exchanges["sum"]
	if nosuch.Count != 0 || nosuch.Errors != 15 || nosuch.ErrorCodes[why] != 15 || sum.Count != 15 || sum.Errors != 0 {
		t.Fatalf("nosuch %+v, sum %+v: want 15 error answers and 15 sums", nosuch, sum)
	}
	if r.ErrorAnswers[why] != 20 || len(r.ErrorAnswers) != 1 || r.Answers != 35 || r.Failures["steps[1].call"][why] != 5 || r.Finished != 5 {
		t.Fatalf("error answers %v, answers %d, failures %v, finished %d: want 20 × %q (5 unnamed), 35 answers", r.ErrorAnswers, r.Answers, r.Failures, r.Finished, why)
	}
}
