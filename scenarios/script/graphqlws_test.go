package script

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/graphqlws"
	"github.com/wsplan/wsplan/internal/units"
)

// GraphQL over WebSocket through script phases. gqlServer is the part of
// internal/client's test server (proto_graphqlws_test.go) a script's
// conversation needs, copied: a kind's tests cannot import the core's.

// gqlServer speaks graphql-transport-ws (as graphql-ws 6 does) over
// gorilla/websocket: connection_init, ping/pong, the room subscription (a
// first null result once live, then every publish), the publish mutation
// (one result, then complete), a query that fails, complete.
type gqlServer struct {
	mu    sync.Mutex
	rooms map[string]map[*gqlPeer]string // room -> subscriber -> operation id
}

// gqlPeer is one connection of the test servers (gqlServer, rpcServer).
type gqlPeer struct {
	mu sync.Mutex
	ws *websocket.Conn
}

func (p *gqlPeer) send(v any) {
	b, _ := json.Marshal(v)
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.ws.WriteMessage(websocket.TextMessage, b) // the client sees what arrives
}

func (s *gqlServer) start(t testing.TB) string {
	t.Helper()
	s.rooms = map[string]map[*gqlPeer]string{}
	up := websocket.Upgrader{Subprotocols: []string{graphqlws.Subprotocol}, CheckOrigin: func(*http.Request) bool { return true }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		p := &gqlPeer{ws: ws}
		defer s.leave(p)
		s.serve(p)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func (s *gqlServer) serve(p *gqlPeer) {
	for {
		_, b, err := p.ws.ReadMessage()
		if err != nil {
			return
		}
		var m struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(b, &m) != nil {
			return
		}
		switch m.Type {
		case "connection_init":
			p.send(map[string]any{"type": "connection_ack"})
		case "ping":
			p.send(map[string]any{"type": "pong"})
		case "subscribe":
			s.subscribe(p, m.ID, m.Payload)
		case "complete":
			s.mu.Lock()
			for _, subs := range s.rooms {
				if subs[p] == m.ID {
					delete(subs, p)
				}
			}
			s.mu.Unlock()
		}
	}
}

// subscribe runs one operation: the room subscription, the publish
// mutation, or anything else as a query answered {"data":{"echo":…}}.
func (s *gqlServer) subscribe(p *gqlPeer, id string, payload json.RawMessage) {
	var op struct {
		Query     string
		Variables struct{ Room, Data string }
	}
	_ = json.Unmarshal(payload, &op) // a bad payload is a query with no variables
	q := strings.TrimSpace(op.Query)
	switch {
	case strings.HasPrefix(q, "subscription"):
		s.mu.Lock()
		if s.rooms[op.Variables.Room] == nil {
			s.rooms[op.Variables.Room] = map[*gqlPeer]string{}
		}
		s.rooms[op.Variables.Room][p] = id
		s.mu.Unlock()
		p.send(map[string]any{"id": id, "type": "next", "payload": map[string]any{"data": map[string]any{"message": nil}}})
	case strings.HasPrefix(q, "mutation"):
		s.mu.Lock()
		for peer, sub := range s.rooms[op.Variables.Room] {
			peer.send(map[string]any{"id": sub, "type": "next", "payload": map[string]any{"data": map[string]any{"message": op.Variables.Data}}})
		}
		s.mu.Unlock()
		p.send(map[string]any{"id": id, "type": "next", "payload": map[string]any{"data": map[string]any{"publish": true}}})
		p.send(map[string]any{"id": id, "type": "complete"})
	case strings.Contains(q, "bad"):
		p.send(map[string]any{"id": id, "type": "error", "payload": []any{map[string]any{"message": "Cannot query field \"bad\""}}})
	default:
		p.send(map[string]any{"id": id, "type": "next", "payload": map[string]any{"data": map[string]any{"echo": q}}})
		p.send(map[string]any{"id": id, "type": "complete"})
	}
}

func (s *gqlServer) leave(p *gqlPeer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, subs := range s.rooms {
		delete(subs, p)
	}
}

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

// TestGraphQLWSScript runs gqlScript's users against gqlServer.
func TestGraphQLWSScript(t *testing.T) {
	s := &gqlServer{}
	c := gqlClient(t, s.start(t), graphqlws.Settings{})
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
