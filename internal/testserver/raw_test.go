package testserver

import (
	"bufio"
	"net"
	"testing"

	"github.com/gorilla/websocket"
)

// TestRawServer: RawServer's handshake satisfies a real client, and a
// Handle built of ReadClientFrame and ServerFrame echoes its messages,
// short and long (a 16-bit length); Conns counts the connection.
func TestRawServer(t *testing.T) {
	s := &RawServer{Handle: func(c net.Conn, r *bufio.Reader) {
		for {
			fin, op, p, err := ReadClientFrame(r)
			if err != nil {
				return
			}
			if _, err := c.Write(ServerFrame(fin, op, p)); err != nil {
				return
			}
		}
	}}
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+s.Start(t)+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, msg := range []string{"hi", string(make([]byte, 300))} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		op, got, err := ws.ReadMessage()
		if err != nil || op != websocket.TextMessage || string(got) != msg {
			t.Fatalf("echo of %d bytes: op %d, %d bytes, %v", len(msg), op, len(got), err)
		}
	}
	if n := len(s.Conns()); n != 1 {
		t.Errorf("Conns: %d, want 1", n)
	}
}
