package prototest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// peer is one connection of the JSON-message servers (GQLServer,
// RPCServer): its writes are serialized, as gorilla/websocket wants.
type peer struct {
	mu sync.Mutex
	ws *websocket.Conn

	lastPing  atomic.Int64 // when the server last pinged it, Unix ns
	lastFrame time.Time    // when its previous frame came (the reader's own)
}

// send writes v as one JSON text message.
func (p *peer) send(v any) {
	b, _ := json.Marshal(v)
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.ws.WriteMessage(websocket.TextMessage, b) // the client sees what arrives
}

// closeWith sends a close frame with code and text.
func (p *peer) closeWith(code int, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second)) // best effort, as servers do
}

// serve runs an HTTP server on 127.0.0.1 until the test ends that
// upgrades every request with up and hands the connection to handle,
// closing it when handle returns; it returns the server's host:port.
func serve(t testing.TB, up websocket.Upgrader, handle func(p *peer)) string {
	t.Helper()
	up.CheckOrigin = func(*http.Request) bool { return true }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		handle(&peer{ws: ws})
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}
