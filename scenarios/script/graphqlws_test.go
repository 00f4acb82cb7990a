package script

import (
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/graphqlws"
	"github.com/wsplan/wsplan/internal/prototest"
	"github.com/wsplan/wsplan/internal/units"
)

// GraphQL over WebSocket through script phases, against
// prototest.GQLServer (the server internal/client's tests run too).

// gqlClient makes a client of the graphql-ws protocol.
func gqlClient(t *testing.T, addr string, o graphqlws.Settings) *client.Client {
	t.Helper()
	return clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 2, Protocol: client.ProtocolOptions{Name: graphqlws.Name, Settings: &o}})
}

// gqlScript subscribes to a room, feeds it with mutations and expects
// every result; awaits a mutation's own result; stops the subscription
// (a mutation after it delivers nothing, or its result would come after
// an unexpected next); a query the server refuses answers with an error.
const gqlScript = `
steps:
  - subscribe:
      topic: 'subscription($room:String!){ message(room:$room) }'
      variables: '{"room":"r{{.conn}}"}'
      as: sub
      reply: {json: {$.data.message: "null"}}
  - loop:
      count: 5
      steps:
        - publish: {topic: 'mutation($room:String!,$data:String!){ publish(room:$room,data:$data) }', payload: '{"room":"r{{.conn}}","data":"m{{.seq}}"}'}
        - expect: {type: next, json: {$.data.message: "m{{.seq}}"}, as: fanout}
  - unsubscribe: {topic: "1"}
  - publish:
      topic: "mutation($room:String!,$data:String!){\n  publish(room:$room,data:$data)\n}"
      payload: '{"room":"r{{.conn}}","data":"late"}'
      as: pub
      reply: {json: {$.data.publish: true}}
  - subscribe: {topic: '{ bad }', as: bad}
`

// TestGraphQLWSScript runs gqlScript's users against prototest.GQLServer.
func TestGraphQLWSScript(t *testing.T) {
	s := &prototest.GQLServer{}
	c := gqlClient(t, s.Start(t), graphqlws.Settings{})
	res, err := c.Run(t.Context(), &Params{Steps: steps(t, gqlScript), Users: 20, Iterations: 1, Concurrency: 20,
		Timeout: units.Duration(5 * time.Second), ConnectTimeout: units.Duration(5 * time.Second), Drain: units.Duration(5 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	count := func(name string) int64 {
		if e := r.Exchanges[name]; e != nil {
			return e.Count
		}
		return -1
	}
	if count("sub") != 20 || count("fanout") != 100 || count("pub") != 20 || r.Exchanges["bad"].Errors != 20 {
		t.Errorf("exchanges: sub %d, fanout %d, pub %d, bad errors %d; want 20, 100, 20, 20 (failures %v)",
			count("sub"), count("fanout"), count("pub"), r.Exchanges["bad"].Errors, r.Failures)
	}
	if r.Unexpected != 0 || r.Finished != 20 || r.Exchanges["sub"].Mismatched != 0 || r.Exchanges["pub"].Mismatched != 0 {
		t.Errorf("unexpected %d, finished %d, mismatched sub %d pub %d; want 0, 20, 0, 0", r.Unexpected, r.Finished,
			r.Exchanges["sub"].Mismatched, r.Exchanges["pub"].Mismatched)
	}
	const why = `graphql error: Cannot query field "bad"`
	if got := r.Failures["steps[4].subscribe"][why]; got != 20 || r.ErrorAnswers[why] != 20 || r.Exchanges["bad"].ErrorCodes[why] != 20 {
		t.Errorf("failures %v, error answers %v, want 20 × %q on steps[4].subscribe", r.Failures, r.ErrorAnswers, why)
	}
}
