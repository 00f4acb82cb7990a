package faultserver

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// Socket.IO v5 over Engine.IO v4, WebSocket transport: the server opens
// (0{sid, pingInterval, pingTimeout}), answers a namespace's CONNECT
// (40 → 40{sid}; 44{message} refuses), pings every Beat, acknowledges
// events that ask for it with their arguments (42<id>["e",a…] →
// 43<id>[a…]), and carries rooms as examples/socketio/server.js does: a
// "join" event joins the room its argument names (acknowledged), a
// "publish" event {room, data} sends ["message", data] to the room.

// sioDefaultBeat is Engine.IO's default pingInterval.
const sioDefaultBeat = 25 * time.Second

func (s *Server) serveSocketIO(p *peer, _ *http.Request, greet Fault) {
	beat := s.o.Beat
	if beat <= 0 {
		beat = sioDefaultBeat
	}
	open := `0{"sid":"f` + strconv.FormatInt(s.greets.Load(), 10) + `","upgrades":[],"pingInterval":` + strconv.FormatInt(beat.Milliseconds(), 10) +
		`,"pingTimeout":` + strconv.FormatInt(beat.Milliseconds(), 10) + `,"maxPayload":1000000}`
	if p.write(websocket.TextMessage, []byte(open)) != nil {
		return
	}
	stop := make(chan struct{})
	defer close(stop)
	go s.sioPing(p, beat, stop)
	ns := ""
	for {
		_, msg, err := p.ws.ReadMessage()
		if err != nil || len(msg) == 0 {
			return
		}
		switch msg[0] {
		case '3', '6': // pong, noop
			continue
		case '1':
			return
		case '4':
		default:
			continue
		}
		if len(msg) < 2 {
			continue
		}
		body := string(msg[2:])
		if strings.HasPrefix(body, "/") {
			if i := strings.IndexByte(body, ','); i >= 0 {
				ns, body = body[:i+1], body[i+1:]
			}
		}
		if msg[1] == '0' {
			if !s.sioConnect(p, ns, greet) {
				return
			}
			continue
		}
		if msg[1] == '2' {
			s.sioEvent(p, ns, body)
		}
	}
}

// sioConnect answers a namespace's CONNECT as the greeting fault says;
// false ends the connection.
func (s *Server) sioConnect(p *peer, ns string, greet Fault) bool {
	var out string
	switch greet {
	case Refuse:
		out = "44" + ns + `{"message":"not authorized"}`
	case Mute:
		return true
	case Garble:
		out = `42` + ns + `["hello"]`
	default:
		out = "40" + ns + `{"sid":"x"}`
	}
	return p.write(websocket.TextMessage, []byte(out)) == nil
}

// sioPing pings every beat (Silent: the pings hit are left out).
func (s *Server) sioPing(p *peer, beat time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(beat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-s.dead:
			return
		case <-t.C:
			if s.answerFault() == Silent {
				continue
			}
			if p.write(websocket.TextMessage, []byte{'2'}) != nil {
				return
			}
		}
	}
}

// sioEvent takes an event packet's body: [ack id] JSON array.
func (s *Server) sioEvent(p *peer, ns, body string) {
	i := 0
	for i < len(body) && body[i] >= '0' && body[i] <= '9' {
		i++
	}
	id, args := body[:i], body[i:]
	var arr []json.RawMessage
	if json.Unmarshal([]byte(args), &arr) != nil || len(arr) == 0 {
		return
	}
	var name string
	if json.Unmarshal(arr[0], &name) != nil {
		return
	}
	switch name {
	case "join":
		var room string
		if len(arr) > 1 && json.Unmarshal(arr[1], &room) == nil {
			s.rooms.join("sio/"+room, p, "")
		}
		s.sioAck(p, ns, id, "[]")
		return
	case "publish":
		var pub struct{ Room, Data string }
		if len(arr) < 2 || json.Unmarshal(arr[1], &pub) != nil {
			return
		}
		data, err := base64.StdEncoding.DecodeString(pub.Data)
		if err != nil {
			return
		}
		s.deliver("sio/"+pub.Room, nil, data, func(q *peer, _ string, b []byte) {
			// A member that went away misses it.
			_ = q.write(websocket.TextMessage, []byte(`42`+ns+`["message","`+base64.StdEncoding.EncodeToString(b)+`"]`))
		})
		return
	}
	rest := "[]"
	if len(arr) > 1 {
		b, _ := json.Marshal(arr[1:]) // raw messages: cannot fail
		rest = string(b)
	}
	s.sioAck(p, ns, id, rest)
}

// sioAck acknowledges event id (none asked: nothing) with args, as the
// fault that hits it says.
func (s *Server) sioAck(p *peer, ns, id, args string) {
	if id == "" {
		return
	}
	switch s.answerFault() {
	case Drop:
		return
	case Wrong:
		args = string(corrupt([]byte(args), true))
	}
	// A client that went away gets nothing.
	_ = p.write(websocket.TextMessage, []byte("43"+ns+id+args))
}
