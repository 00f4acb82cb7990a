package faultserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"
)

// JSON-RPC 2.0 with rpc-websockets' events, no greeting: a request
// {method, params, id} gets {result, id}, or {error, id}; a notification
// (no id) gets nothing; a batch gets a batch. Every method echoes its
// params, but two: rpc.on ["room.N", …] joins those events' rooms
// ({"room.N":"ok"}; Error: "provided event invalid"), and the
// notification broadcast ["room.N", data] sends the event
// {"notification":"room.N","params":[data]} to the room's members.

// rpcIn is a request or notification.
type rpcIn struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	ID     json.RawMessage `json:"id"`
}

func (s *Server) serveJSONRPC(p *peer, _ *http.Request, _ Fault) {
	for {
		_, msg, err := p.ws.ReadMessage()
		if err != nil {
			return
		}
		msg = bytes.TrimSpace(msg)
		if len(msg) > 0 && msg[0] == '[' {
			var batch []json.RawMessage
			if json.Unmarshal(msg, &batch) != nil {
				continue
			}
			var out [][]byte
			for _, m := range batch {
				if r := s.rpcOne(p, m); r != nil {
					out = append(out, r)
				}
			}
			if len(out) > 0 && p.write(websocket.TextMessage, append(append([]byte{'['}, bytes.Join(out, []byte{','})...), ']')) != nil {
				return
			}
			continue
		}
		if r := s.rpcOne(p, msg); r != nil && p.write(websocket.TextMessage, r) != nil {
			return
		}
	}
}

// rpcOne runs one request and returns its response (nil: none).
func (s *Server) rpcOne(p *peer, msg []byte) []byte {
	var m rpcIn
	if json.Unmarshal(msg, &m) != nil {
		return []byte(`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`)
	}
	notify := len(m.ID) == 0 || string(m.ID) == "null"
	var args []json.RawMessage
	// Params that are not an array: echoed, or no room.
	_ = json.Unmarshal(m.Params, &args)
	switch m.Method {
	case "broadcast":
		var room, data string
		if len(args) < 2 || json.Unmarshal(args[0], &room) != nil || json.Unmarshal(args[1], &data) != nil {
			break
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			break
		}
		s.deliver("rpc/"+room, nil, b, func(q *peer, _ string, d []byte) {
			// A member that went away misses it.
			_ = q.write(websocket.TextMessage, []byte(`{"notification":`+quote(room)+`,"params":["`+base64.StdEncoding.EncodeToString(d)+`"]}`))
		})
	case "rpc.on":
		if notify {
			return nil
		}
		return s.rpcJoin(p, args, m.ID)
	}
	if notify {
		return nil
	}
	result := string(m.Params)
	if result == "" {
		result = "null"
	}
	switch s.answerFault() {
	case Drop:
		return nil
	case Error:
		return []byte(`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Forbidden"},"id":` + string(m.ID) + `}`)
	case Wrong:
		result = string(corrupt([]byte(result), true))
	}
	return []byte(`{"jsonrpc":"2.0","result":` + result + `,"id":` + string(m.ID) + `}`)
}

// rpcJoin answers rpc.on: every event named joins its room, "ok" (Error:
// none does, "provided event invalid").
func (s *Server) rpcJoin(p *peer, events []json.RawMessage, id json.RawMessage) []byte {
	f := s.answerFault()
	if f == Drop {
		return nil
	}
	var parts []string
	for _, e := range events {
		var name string
		if json.Unmarshal(e, &name) != nil {
			continue
		}
		v := "ok"
		if f == Error {
			v = "provided event invalid"
		} else {
			s.rooms.join("rpc/"+name, p, "")
		}
		parts = append(parts, quote(name)+":"+quote(v))
	}
	return []byte(`{"jsonrpc":"2.0","result":{` + strings.Join(parts, ",") + `},"id":` + string(id) + `}`)
}
