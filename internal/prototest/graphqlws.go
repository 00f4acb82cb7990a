package prototest

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/internal/proto/graphqlws"
)

// GQLServer speaks graphql-transport-ws (as graphql-ws 6 does) over
// gorilla/websocket, enough for the client's and the scripts' tests:
// connection_init (refused with 4403, or never acked), ping/pong both
// ways, the room subscription (a first null result once live, then every
// publish), the publish mutation (one result, then complete), a query
// that fails ({ bad }), any other query (answered {"data":{"echo":…}}),
// complete. The zero GQLServer acks every connection_init without a
// token and never pings.
type GQLServer struct {
	Refuse bool          // close 4403 Forbidden on connection_init
	Mute   bool          // never answer connection_init
	Ping   time.Duration // ping every connection this often; 0 = never
	Token  string        // connection_init's payload must carry this token
	// Quiet is the clients' keepalive: a client ping is early when, in the
	// half of it before the ping came, the server both pinged that client
	// and heard from it (so neither side was stalled: the client answered
	// pings and still pinged).
	Quiet time.Duration

	// Pings the server sent, pongs and pings it got from clients, and
	// the early ones of those (see Quiet).
	Pings, Pongs, ClientPings, EarlyPings atomic.Int64
	Subprotocol                           atomic.Value // the last one agreed

	mu    sync.Mutex
	rooms map[string]map[*peer]string // room -> subscriber -> operation id
}

// Start serves s until the test ends and returns its host:port.
func (s *GQLServer) Start(t testing.TB) string {
	t.Helper()
	s.rooms = map[string]map[*peer]string{}
	return serve(t, websocket.Upgrader{Subprotocols: []string{graphqlws.Subprotocol}}, func(p *peer) {
		s.Subprotocol.Store(p.ws.Subprotocol())
		defer s.leave(p)
		s.serve(p)
	})
}

func (s *GQLServer) serve(p *peer) {
	done := make(chan struct{})
	defer close(done)
	for {
		_, b, err := p.ws.ReadMessage()
		if err != nil {
			return
		}
		now, prev := time.Now(), p.lastFrame
		p.lastFrame = now
		var m struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(b, &m) != nil {
			p.closeWith(4400, "Invalid message received")
			return
		}
		switch m.Type {
		case "connection_init":
			if !s.init(p, m.Payload, done) {
				return
			}
		case "ping":
			s.ClientPings.Add(1)
			pinged := time.Unix(0, p.lastPing.Load())
			if s.Quiet > 0 && now.Sub(pinged) < s.Quiet/2 && now.Sub(prev) < s.Quiet/2 {
				s.EarlyPings.Add(1)
			}
			p.send(map[string]any{"type": "pong"})
		case "pong":
			s.Pongs.Add(1)
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

// init answers connection_init: 4403 (false: the connection ends) for a
// refusal or a wrong token, nothing when mute, else connection_ack and
// the server's pings from then until done.
func (s *GQLServer) init(p *peer, payload json.RawMessage, done chan struct{}) bool {
	var init struct{ Token string }
	_ = json.Unmarshal(payload, &init) // absent: no token
	switch {
	case s.Refuse || init.Token != s.Token:
		p.closeWith(4403, "Forbidden")
		return false
	case s.Mute:
		return true
	}
	p.send(map[string]any{"type": "connection_ack"})
	if s.Ping > 0 {
		go s.pinger(p, done)
	}
	return true
}

func (s *GQLServer) pinger(p *peer, done chan struct{}) {
	tk := time.NewTicker(s.Ping)
	defer tk.Stop()
	for {
		select {
		case <-done:
			return
		case <-tk.C:
			s.Pings.Add(1)
			p.lastPing.Store(time.Now().UnixNano())
			p.send(map[string]any{"type": "ping"})
		}
	}
}

// subscribe runs one operation: the room subscription, the publish
// mutation, or anything else as a query answered {"data":{"echo":…}}.
func (s *GQLServer) subscribe(p *peer, id string, payload json.RawMessage) {
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
			s.rooms[op.Variables.Room] = map[*peer]string{}
		}
		s.rooms[op.Variables.Room][p] = id
		s.mu.Unlock()
		p.send(map[string]any{"id": id, "type": "next", "payload": map[string]any{"data": map[string]any{"message": nil}}})
	case strings.HasPrefix(q, "mutation"):
		s.mu.Lock()
		for sub, subID := range s.rooms[op.Variables.Room] {
			sub.send(map[string]any{"id": subID, "type": "next", "payload": map[string]any{"data": map[string]any{"message": op.Variables.Data}}})
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

func (s *GQLServer) leave(p *peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, subs := range s.rooms {
		delete(subs, p)
	}
}
