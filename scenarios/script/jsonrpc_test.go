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

// JSON-RPC through script phases, against prototest.RPCServer (the
// server internal/client's tests run too).

// rpcScript calls by id (pipelined), notifies, subscribes to an event
// and receives it, gets an error answer, and a batch's two responses.
const rpcScript = `
steps:
  - loop:
      count: 10
      inflight: 4
      steps:
        - call: {method: echo, params: '[{{.seq}}, "x"]', as: echo, reply: {json: {"$[0]": "{{.seq}}"}}}
  - call: {method: rpc.on, params: '["news{{.conn}}"]', as: on, reply: {prefix: '{"news{{.conn}}":"ok"'}}
  - notify: {method: publish, params: '["news{{.conn}}", "hi {{.conn}}"]'}
  - expect: {type: event, topic: 'news{{.conn}}', json: {"$[0]": "hi {{.conn}}"}, as: news}
  - call: {method: fail, as: fail}
  - send: '[{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":"a"},{"jsonrpc":"2.0","method":"echo","params":["x"],"id":"b"}]'
  - expect: {type: ack, count: 2, as: batch}
`

// TestJSONRPCScript runs rpcScript's users against prototest.RPCServer.
func TestJSONRPCScript(t *testing.T) {
	s := &prototest.RPCServer{}
	c := clienttest.NewClient(t, client.Options{Targets: []string{s.Start(t)}, Loops: 2, Protocol: client.ProtocolOptions{Name: jsonrpc.Name}})
	res, err := c.Run(t.Context(), &Params{Steps: steps(t, rpcScript), Users: 20, Iterations: 1, Concurrency: 20,
		Timeout: units.Duration(5 * time.Second), ConnectTimeout: units.Duration(5 * time.Second), Drain: units.Duration(5 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	for name, want := range map[string]int64{"echo": 200, "on": 20, "news": 20, "batch": 20} {
		if e := r.Exchanges[name]; e == nil || e.Count != want || e.Mismatched != 0 {
			t.Errorf("exchange %s: %+v, want %d, none mismatched (failures %v)", name, e, want, r.Failures)
		}
	}
	const why = "jsonrpc -32000"
	if e := r.Exchanges["fail"]; e.Errors != 20 || e.ErrorCodes[why] != 20 || r.ErrorAnswers[why] != 20 || len(r.ErrorAnswers) != 1 || r.Failures["steps[4].call"][why] != 20 {
		t.Errorf("fail: %+v, error answers %v, failures %v; want 20 × %q", e, r.ErrorAnswers, r.Failures, why)
	}
	// Every call and the rpc.on are answers; the batch's are expected
	// messages, not answers to a verb.
	if want := int64(20 * (10 + 1 + 1)); r.Answers != want {
		t.Errorf("answers %d, want %d", r.Answers, want)
	}
	if r.Unexpected != 0 || r.Finished != 20 {
		t.Errorf("unexpected %d, finished %d; want 0, 20", r.Unexpected, r.Finished)
	}
}

// TestJSONRPCErrorAnswers: calls to a method the server does not have
// are error answers counted by code (-32601), the exchange not
// completed; the calls it has complete.
func TestJSONRPCErrorAnswers(t *testing.T) {
	s := &prototest.RPCServer{}
	c := clienttest.NewClient(t, client.Options{Targets: []string{s.Start(t)}, Loops: 2, Protocol: client.ProtocolOptions{Name: jsonrpc.Name}})
	res, err := c.Run(t.Context(), &Params{Steps: steps(t, `
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
	r := res.(*Result)
	const why = "jsonrpc -32601"
	nosuch, sum := r.Exchanges["nosuch"], r.Exchanges["sum"]
	if nosuch.Count != 0 || nosuch.Errors != 15 || nosuch.ErrorCodes[why] != 15 || sum.Count != 15 || sum.Errors != 0 {
		t.Fatalf("nosuch %+v, sum %+v: want 15 error answers and 15 sums", nosuch, sum)
	}
	if r.ErrorAnswers[why] != 20 || len(r.ErrorAnswers) != 1 || r.Answers != 35 || r.Failures["steps[1].call"][why] != 5 || r.Finished != 5 {
		t.Fatalf("error answers %v, answers %d, failures %v, finished %d: want 20 × %q (5 unnamed), 35 answers", r.ErrorAnswers, r.Answers, r.Failures, r.Finished, why)
	}
}
