package faultserver

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"
)

// graphql-transport-ws: connection_init → connection_ack (Refuse closes
// 4403 Forbidden), ping → pong, subscribe → next … complete or error.
// An operation is
//
//   - a subscription with variables.room: joins the room; its first
//     result is null (the join's answer, as examples/graphql-ws does),
//     then every message published to the room;
//   - a mutation with variables.room and variables.data: publishes data
//     to the room; one result, then complete;
//   - anything else: one result echoing its variables ({"echo": t} for
//     variables.t, else the variables), then complete.

// gqlIn is a client's message.
type gqlIn struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Payload struct {
		Query     string          `json:"query"`
		Variables json.RawMessage `json:"variables"`
	} `json:"payload"`
}

func (s *Server) serveGraphQL(p *peer, _ *http.Request, greet Fault) {
	acked := false
	for {
		_, msg, err := p.ws.ReadMessage()
		if err != nil {
			return
		}
		var m gqlIn
		if json.Unmarshal(msg, &m) != nil {
			p.closeWith(4400, "Invalid message received")
			return
		}
		switch {
		case m.Type == "connection_init":
			switch greet {
			case Refuse:
				p.closeWith(4403, "Forbidden")
				return
			case Mute:
				continue
			case Garble:
				if p.write(websocket.TextMessage, []byte(`{"type":"next","id":"0","payload":{}}`)) != nil {
					return
				}
				continue
			}
			acked = true
			if p.write(websocket.TextMessage, []byte(`{"type":"connection_ack"}`)) != nil {
				return
			}
		case m.Type == "ping":
			if s.answerFault() == Silent {
				continue
			}
			if p.write(websocket.TextMessage, []byte(`{"type":"pong"}`)) != nil {
				return
			}
		case !acked:
			p.closeWith(4401, "Unauthorized")
			return
		case m.Type == "subscribe":
			s.gqlOperation(p, &m)
		case m.Type == "complete":
			s.rooms.leaveSub(p, m.ID)
		}
	}
}

// gqlOperation runs one subscribe.
func (s *Server) gqlOperation(p *peer, m *gqlIn) {
	var vars struct{ Room, Data, T string }
	// Absent or other variables: an echo of them.
	_ = json.Unmarshal(m.Payload.Variables, &vars)
	q := strings.TrimSpace(m.Payload.Query)
	isSub := strings.HasPrefix(q, "subscription")
	var result string
	switch {
	case isSub && vars.Room != "":
		result = `{"data":{"message":null}}`
	case strings.HasPrefix(q, "mutation") && vars.Room != "":
		data, err := base64.StdEncoding.DecodeString(vars.Data)
		if err != nil {
			s.gqlSend(p, m.ID, "error", `[{"message":"data is not base64"}]`)
			return
		}
		s.deliver("gql/"+vars.Room, nil, data, func(q *peer, sub string, b []byte) {
			// A member that went away misses it.
			_ = q.write(websocket.TextMessage, []byte(`{"id":`+quote(sub)+`,"type":"next","payload":{"data":{"message":"`+base64.StdEncoding.EncodeToString(b)+`"}}}`))
		})
		result = `{"data":{"publish":true}}`
	case vars.T != "":
		result = `{"data":{"echo":` + quote(vars.T) + `}}`
	default:
		v := "null"
		if len(m.Payload.Variables) > 0 {
			v = string(m.Payload.Variables)
		}
		result = `{"data":{"echo":` + v + `}}`
	}
	switch s.answerFault() {
	case Drop:
		return
	case Error:
		s.gqlSend(p, m.ID, "error", `[{"message":"Forbidden","extensions":{"code":"FORBIDDEN"}}]`)
		return
	case Wrong:
		result = string(corrupt([]byte(result), true))
	}
	if isSub && vars.Room != "" {
		s.rooms.join("gql/"+vars.Room, p, m.ID)
	}
	if !s.gqlSend(p, m.ID, "next", result) || isSub {
		return
	}
	s.gqlSend(p, m.ID, "complete", "")
}

// gqlSend sends a message of type typ for operation id with payload
// (JSON; "" = none); false when the connection is gone.
func (s *Server) gqlSend(p *peer, id, typ, payload string) bool {
	b := `{"id":` + quote(id) + `,"type":"` + typ + `"`
	if payload != "" {
		b += `,"payload":` + payload
	}
	return p.write(websocket.TextMessage, []byte(b+"}")) == nil
}

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string: cannot fail
	return string(b)
}
