package prototest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Refuser is a WebSocket server that answers every upgrade with Status
// (when set), else upgrades (agreeing to the client's first subprotocol)
// and runs Greet on the connection: a protocol's refusal, or a transient
// failure. It counts the upgrade requests, the client's attempts.
type Refuser struct {
	Status int                   // the HTTP status every upgrade gets; 0 = upgrade
	Greet  func(*websocket.Conn) // what an upgraded connection is told (ReplyThen, SIORefuse)

	Attempts atomic.Int64 // upgrade requests
}

// Start serves s until the test ends and returns its host:port.
func (s *Refuser) Start(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Attempts.Add(1)
		if s.Status != 0 {
			http.Error(w, "go away\nnow", s.Status)
			return
		}
		var sub []string
		if offered := websocket.Subprotocols(r); len(offered) > 0 {
			sub = offered[:1]
		}
		up := websocket.Upgrader{Subprotocols: sub, CheckOrigin: func(*http.Request) bool { return true }}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		s.Greet(ws)
		_ = ws.SetReadDeadline(time.Now().Add(2 * time.Second))
		for { // until the client closes
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// ReplyThen reads the client's first message and writes msgs (opcode op)
// and, when close is set, a close frame with it (code, then text).
func ReplyThen(op int, close []byte, msgs ...string) func(ws *websocket.Conn) {
	return func(ws *websocket.Conn) {
		if _, _, err := ws.ReadMessage(); err != nil {
			return
		}
		for _, m := range msgs {
			_ = ws.WriteMessage(op, []byte(m)) // the client sees what arrives
		}
		if close != nil {
			_ = ws.WriteControl(websocket.CloseMessage, close, time.Now().Add(time.Second))
		}
	}
}

// SIORefuse is a Socket.IO server that opens Engine.IO and answers the
// namespace connect (to /chat) with CONNECT_ERROR data.
func SIORefuse(data string) func(ws *websocket.Conn) {
	return func(ws *websocket.Conn) {
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`0{"sid":"x","upgrades":[],"pingInterval":25000,"pingTimeout":20000}`))
		ReplyThen(websocket.TextMessage, nil, "44/chat,"+data)(ws)
	}
}
