package faultserver

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// STOMP 1.2 over WebSocket: CONNECT (or STOMP) → CONNECTED with the
// server's heart-beat (Beat; Refuse: ERROR, then the end), SUBSCRIBE,
// UNSUBSCRIBE and SEND with their RECEIPTs when asked, a SEND's body as a
// MESSAGE to every subscriber of its destination, DISCONNECT. An error
// answer is an ERROR naming the receipt, which ends the connection.

// stompSession is one connection's state.
type stompSession struct {
	s    *Server
	p    *peer
	open bool
	ids  atomic.Int64 // message-id
}

func (s *Server) serveSTOMP(p *peer, _ *http.Request, greet Fault) {
	st := &stompSession{s: s, p: p}
	stop := make(chan struct{})
	defer close(stop)
	var part []byte
	for {
		_, msg, err := p.ws.ReadMessage()
		if err != nil {
			return
		}
		part = append(part, msg...)
		for {
			f, n, err := stompParse(part)
			if err != nil {
				return
			}
			part = part[n:]
			if f == nil {
				break
			}
			if !st.frame(f, greet, stop) {
				return
			}
		}
		part = append([]byte(nil), part...)
	}
}

// send writes one frame; false when the connection is gone.
func (st *stompSession) send(cmd string, body []byte, headers ...string) bool {
	return st.p.write(websocket.TextMessage, stompAppend(nil, cmd, body, headers...)) == nil
}

// frame takes one frame; false ends the connection.
func (st *stompSession) frame(f *stompFrame, greet Fault, stop <-chan struct{}) bool {
	if !st.open && f.cmd != "CONNECT" && f.cmd != "STOMP" {
		st.send("ERROR", []byte("CONNECT first"), "message", "not connected")
		return false
	}
	receipt := f.headers["receipt"]
	switch f.cmd {
	case "CONNECT", "STOMP":
		return st.connect(greet, stop)
	case "SUBSCRIBE":
		if !st.answer(receipt) {
			return false
		}
		st.s.rooms.join("stomp/"+f.headers["destination"], st.p, f.headers["id"])
		return true
	case "UNSUBSCRIBE":
		st.s.rooms.leaveSub(st.p, f.headers["id"])
		return st.answer(receipt)
	case "SEND":
		dest := f.headers["destination"]
		st.s.deliver("stomp/"+dest, nil, f.body, func(q *peer, sub string, b []byte) {
			id := strconv.FormatInt(st.ids.Add(1), 10)
			// A subscriber that went away misses it.
			_ = q.write(websocket.TextMessage, stompAppend(nil, "MESSAGE", b, "subscription", sub, "message-id", id, "destination", dest))
		})
		return st.answer(receipt)
	case "DISCONNECT":
		if receipt != "" {
			st.send("RECEIPT", nil, "receipt-id", receipt)
		}
		return false
	}
	st.send("ERROR", []byte(f.cmd), "message", "unknown command")
	return false
}

// connect answers CONNECT as the greeting fault says, and starts the
// server's heart-beats.
func (st *stompSession) connect(greet Fault, stop <-chan struct{}) bool {
	if st.open {
		return false
	}
	switch greet {
	case Refuse:
		st.send("ERROR", []byte("Login failed: not authorized"), "message", "Access refused")
		return false
	case Mute:
		return true
	case Garble:
		return st.send("MESSAGE", []byte("hello"), "destination", "/topic/x", "message-id", "0", "subscription", "0")
	}
	st.open = true
	beat := st.s.o.Beat.Milliseconds()
	if !st.send("CONNECTED", nil, "version", "1.2", "heart-beat", strconv.FormatInt(beat, 10)+",0", "server", "faultserver") {
		return false
	}
	if beat > 0 {
		go st.beat(stop)
	}
	return true
}

// beat sends a heart-beat every Beat (Silent: the ones hit are left out).
func (st *stompSession) beat(stop <-chan struct{}) {
	t := time.NewTicker(st.s.o.Beat)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-st.s.dead:
			return
		case <-t.C:
			if st.s.answerFault() == Silent {
				continue
			}
			if st.p.write(websocket.TextMessage, []byte{'\n'}) != nil {
				return
			}
		}
	}
}

// answer sends the RECEIPT a frame asked for (none: nothing), as the
// fault that hits it says; false ends the connection.
func (st *stompSession) answer(receipt string) bool {
	if receipt == "" {
		return true
	}
	switch st.s.answerFault() {
	case Drop:
		return true
	case Error:
		st.send("ERROR", []byte("not authorized to do this"), "receipt-id", receipt, "message", "Forbidden")
		return false
	case Wrong:
		receipt = string(corrupt([]byte(receipt), true))
	}
	return st.send("RECEIPT", nil, "receipt-id", receipt)
}
