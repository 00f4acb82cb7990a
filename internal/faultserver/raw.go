package faultserver

import (
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// serveRaw is the raw server: an echo of every message, or, with
// ?room=N, a member of room N that fans each message out to the room
// (the sender too unless include_sender=false). Pings get pongs. The
// faults: Wrong changes each echo, delivery and pong; Drop leaves them
// out, and a close frame unanswered.
func (s *Server) serveRaw(p *peer, r *http.Request, _ Fault) {
	p.ws.SetPingHandler(func(data string) error {
		s.wait(r.Context())
		b := []byte(data)
		switch s.answerFault() {
		case Drop:
			return nil
		case Wrong:
			b = corrupt(b, false)
		}
		p.wmu.Lock()
		defer p.wmu.Unlock()
		err := p.ws.WriteControl(websocket.PongMessage, b, time.Now().Add(writeTimeout))
		if err == websocket.ErrCloseSent {
			return nil
		}
		return err
	})
	unanswered := false // Drop hit a close frame: the connection stays, mute
	p.ws.SetCloseHandler(func(code int, text string) error {
		s.wait(r.Context())
		if s.answerFault() == Drop {
			unanswered = true
			return nil
		}
		p.wmu.Lock()
		defer p.wmu.Unlock()
		// The connection ends either way.
		_ = p.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(writeTimeout))
		return nil
	})
	room := r.URL.Query().Get("room")
	var skip *peer
	if r.URL.Query().Get("include_sender") == "false" {
		skip = p
	}
	if room != "" {
		s.rooms.join("raw/"+room, p, "")
	}
	for {
		op, msg, err := p.ws.ReadMessage()
		if err != nil {
			if unanswered {
				s.linger()
			}
			return
		}
		if room != "" {
			s.deliver("raw/"+room, skip, msg, func(q *peer, _ string, b []byte) {
				// A member that went away misses it.
				_ = q.write(op, b)
			})
			continue
		}
		s.wait(r.Context())
		switch s.answerFault() {
		case Drop:
			continue
		case Wrong:
			msg = corrupt(msg, op == websocket.TextMessage)
		}
		if p.write(op, msg) != nil {
			return
		}
	}
}

// linger keeps a connection the client closed open, unanswered, until
// the server dies or a while passed.
func (s *Server) linger() {
	select {
	case <-s.dead:
	case <-time.After(lingerFor):
	}
}

// lingerFor is how long linger keeps a connection.
const lingerFor = 30 * time.Second
