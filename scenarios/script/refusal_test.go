package script

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/proto/socketio"
	"github.com/wsplan/wsplan/internal/units"
)

// A protocol's refusal through a script's users. refuser is a copy of
// the one internal/client's tests run (refusal_test.go): a kind's tests
// cannot import the core's.

// refuser is a WebSocket server that answers every upgrade with status
// (when set), else upgrades (agreeing to the client's first subprotocol)
// and runs greet on the connection: a protocol's refusal, or a transient
// failure. It counts the upgrade requests, the client's attempts.
type refuser struct {
	status int
	greet  func(ws *websocket.Conn)

	attempts atomic.Int64
}

func (s *refuser) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.attempts.Add(1)
		if s.status != 0 {
			http.Error(w, "go away\nnow", s.status)
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
		s.greet(ws)
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

// replyThen reads the client's first message and writes msgs (opcode op)
// and, when close is set, a close frame with it (code, then text).
func replyThen(op int, close []byte, msgs ...string) func(ws *websocket.Conn) {
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

// sioRefuse is a Socket.IO server that opens Engine.IO and answers the
// namespace connect with CONNECT_ERROR data.
func sioRefuse(data string) func(ws *websocket.Conn) {
	return func(ws *websocket.Conn) {
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`0{"sid":"x","upgrades":[],"pingInterval":25000,"pingTimeout":20000}`))
		replyThen(websocket.TextMessage, nil, "44/chat,"+data)(ws)
	}
}

// TestRefusalNotRetriedByScript: the rule is the dialer's, so it holds
// for every kind that opens connections: a script's 20 users refused by
// a Socket.IO namespace are 20 attempts, though the phase allows a retry.
func TestRefusalNotRetriedByScript(t *testing.T) {
	srv := &refuser{greet: sioRefuse(`"not authorized"`)}
	c := clienttest.NewClient(t, client.Options{Targets: []string{srv.start(t)}, Loops: 2, Protocol: client.ProtocolOptions{Name: socketio.Name, Settings: &socketio.Settings{Namespace: "/chat"}}})
	res, err := c.Run(t.Context(), &Params{Steps: steps(t, "steps:\n  - emit: {event: chat, data: '1'}\n"), Users: 20, Iterations: 1, Concurrency: 20,
		Timeout: units.Duration(2 * time.Second), ConnectTimeout: units.Duration(2 * time.Second), Retries: 1, Drain: units.Duration(time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*Result)
	const want = client.Reason("socket.io: connect refused: not authorized")
	if got := srv.attempts.Load(); got != 20 || r.OpenFailed != 20 || r.OpenErrors[want] != 20 {
		t.Errorf("%d attempts, %d users failed to open, errors %v; want 20, 20, 20 × %q", got, r.OpenFailed, r.OpenErrors, want)
	}
}
