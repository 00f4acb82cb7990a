package prototest

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/wsplan/wsplan/internal/proto/jsonrpc"
)

// RPCServer answers JSON-RPC 2.0 as rpc-websockets does: methods sum,
// echo, fail (an error), publish and broadcast [event, data] (emit the
// event to its subscribers), rpc.on [events…] ("ok", or "provided event
// invalid" for an event not registered: news0 … news19 are), batches,
// notifications unanswered. The zero RPCServer is ready to Start.
type RPCServer struct {
	mu     sync.Mutex
	events map[string]map[*peer]bool // registered events -> subscribers
}

// Start serves s until the test ends and returns its host:port.
func (s *RPCServer) Start(t testing.TB) string {
	t.Helper()
	s.events = map[string]map[*peer]bool{}
	for i := range 20 {
		s.events["news"+strconv.Itoa(i)] = map[*peer]bool{}
	}
	return serve(t, websocket.Upgrader{}, func(p *peer) {
		defer s.leave(p)
		for {
			_, b, err := p.ws.ReadMessage()
			if err != nil {
				return
			}
			if strings.HasPrefix(strings.TrimSpace(string(b)), "[") {
				var batch []json.RawMessage
				_ = json.Unmarshal(b, &batch) // a bad batch answers nothing
				var out []any
				for _, m := range batch {
					if r := s.run(p, m); r != nil {
						out = append(out, r)
					}
				}
				p.send(out)
				continue
			}
			if r := s.run(p, b); r != nil {
				p.send(r)
			}
		}
	})
}

// run runs one request and returns its response (nil for a
// notification).
func (s *RPCServer) run(p *peer, b []byte) any {
	var m struct {
		Method string
		Params []any
		ID     any
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": -32700, "message": "Parse error"}, "id": nil}
	}
	var result any
	switch m.Method {
	case "sum":
		n := 0.0
		for _, v := range m.Params {
			f, _ := v.(float64)
			n += f
		}
		result = n
	case "echo":
		result = m.Params
	case "fail":
		if m.ID == nil {
			return nil
		}
		return map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": -32000, "message": "Error", "data": "asked to fail"}, "id": m.ID}
	case "publish", jsonrpc.RoomMethod:
		s.mu.Lock()
		name, _ := m.Params[0].(string)
		for sub := range s.events[name] {
			sub.send(map[string]any{"notification": name, "params": m.Params[1:]})
		}
		s.mu.Unlock()
		result = true
	case "rpc.on":
		result = s.on(p, m.Params)
	default:
		return map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": -32601, "message": "Method not found"}, "id": m.ID}
	}
	if m.ID == nil {
		return nil
	}
	return map[string]any{"jsonrpc": "2.0", "result": result, "id": m.ID}
}

// on subscribes p to the events named, and answers each.
func (s *RPCServer) on(p *peer, events []any) map[string]string {
	res := map[string]string{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range events {
		name, _ := v.(string)
		if subs, ok := s.events[name]; ok {
			subs[p] = true
			res[name] = "ok"
		} else {
			res[name] = "provided event invalid"
		}
	}
	return res
}

func (s *RPCServer) leave(p *peer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, subs := range s.events {
		delete(subs, p)
	}
}
