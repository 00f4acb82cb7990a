package testserver

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

// dial connects to s (path and query after the host), with a 5 s deadline.
func dial(t *testing.T, s *Server, pathQuery string, d *websocket.Dialer) *websocket.Conn {
	t.Helper()
	if d == nil {
		d = &websocket.Dialer{}
	}
	scheme := "ws://"
	if s.TLS != nil {
		scheme = "wss://"
	}
	c, _, err := d.Dial(scheme+s.Addr()+pathQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return c
}

func send(t *testing.T, c *websocket.Conn, typ int, msg string) {
	t.Helper()
	if err := c.WriteMessage(typ, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func expect(t *testing.T, c *websocket.Conn, typ int, want string) {
	t.Helper()
	gt, got, err := c.ReadMessage()
	if err != nil || gt != typ || string(got) != want {
		t.Fatalf("read: type %d %q, %v; want type %d %q", gt, got, err, typ, want)
	}
}

// closeCode is the close code the connection ended with: 1006 (abnormal
// closure) when it ended without a close frame, -1 on another error.
func closeCode(c *websocket.Conn) int {
	_, _, err := c.ReadMessage()
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		return ce.Code
	}
	return -1
}

func TestEcho(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := Start(t, Options{})
	c := dial(t, s, "/anywhere", nil)
	send(t, c, websocket.TextMessage, "hello")
	expect(t, c, websocket.TextMessage, "hello")
	send(t, c, websocket.BinaryMessage, "\x00\x01")
	expect(t, c, websocket.BinaryMessage, "\x00\x01")
	if s.Msgs() != 2 || s.Conns() != 1 || s.Live() != 1 {
		t.Errorf("msgs %d conns %d live %d, want 2 1 1", s.Msgs(), s.Conns(), s.Live())
	}
	s.Close()
	if code := closeCode(c); code != websocket.CloseAbnormalClosure {
		t.Errorf("after Close: close code %d, want the connection ended without a close frame (1006)", code)
	}
	if s.Live() != 0 {
		t.Errorf("live %d after Close", s.Live())
	}
}

func TestReply(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  Action
		code int // after the first answer; 0 = the connection goes on
	}{
		{"echo", Echo, 0},
		{"close", EchoClose, websocket.CloseNormalClosure},
		{"drop", EchoDrop, websocket.CloseAbnormalClosure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, Options{Reply: func(id int64, n int, msg []byte) Action {
				switch {
				case id == 1:
					return Ignore
				case n == 2:
					msg[0] = 'X' // changed in place
					return tc.act
				}
				return Echo
			}})
			c := dial(t, s, "/", nil)
			send(t, c, websocket.TextMessage, "ignored")
			send(t, c, websocket.TextMessage, "second")
			expect(t, c, websocket.TextMessage, "Xecond")
			if tc.code != 0 {
				if got := closeCode(c); got != tc.code {
					t.Errorf("close code %d, want %d", got, tc.code)
				}
				return
			}
			send(t, c, websocket.TextMessage, "third")
			expect(t, c, websocket.TextMessage, "third")
		})
	}
}

func TestRooms(t *testing.T) {
	s := Start(t, Options{Rooms: true, Copies: func(k int64) int {
		switch k {
		case 1:
			return 2
		case 4:
			return 0
		}
		return 1
	}})
	a := dial(t, s, "/broadcast?room=1", nil)
	b := dial(t, s, "/broadcast?room=1&include_sender=false", nil)
	other := dial(t, s, "/broadcast?room=2", nil)
	for s.Live() < 3 {
		time.Sleep(time.Millisecond)
	}
	send(t, b, websocket.BinaryMessage, "from b") // delivery 1, to a (not b), twice
	expect(t, a, websocket.BinaryMessage, "from b")
	expect(t, a, websocket.BinaryMessage, "from b")
	send(t, a, websocket.BinaryMessage, "from a") // deliveries 2 and 3, to a and b
	expect(t, a, websocket.BinaryMessage, "from a")
	expect(t, b, websocket.BinaryMessage, "from a")
	send(t, other, websocket.BinaryMessage, "dropped") // delivery 4, to other, not written
	send(t, other, websocket.BinaryMessage, "kept")    // delivery 5; nothing of room 1 came first
	expect(t, other, websocket.BinaryMessage, "kept")
}

func TestRefusalsAndBugs(t *testing.T) {
	s := Start(t, Options{
		Check: func(r *http.Request) error {
			if r.Header.Get("X-Test") == "" {
				return errors.New("missing X-Test")
			}
			return nil
		},
		CheckUTF8: true,
		Pong:      func([]byte) []byte { return []byte("wrong") },
		Delay:     30 * time.Millisecond,
	})
	_, resp, err := websocket.DefaultDialer.Dial("ws://"+s.Addr()+"/", nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("without X-Test: %v, %+v; want 403", err, resp)
	}
	d := &websocket.Dialer{}
	h := http.Header{"X-Test": {"1"}}
	c, _, err := d.Dial("ws://"+s.Addr()+"/", h)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pong := make(chan string, 1)
	c.SetPongHandler(func(p string) error { pong <- p; return nil })
	if err := c.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	send(t, c, websocket.TextMessage, "valid")
	expect(t, c, websocket.TextMessage, "valid")
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("echo after %v, want >= the 30ms delay", d)
	}
	if p := <-pong; p != "wrong" {
		t.Errorf("pong %q, want the Pong option's", p)
	}
	send(t, c, websocket.TextMessage, "\xff")
	if got := closeCode(c); got != websocket.CloseInvalidFramePayloadData {
		t.Errorf("invalid UTF-8: close code %d, want 1007", got)
	}
}

func TestDropAndTLS(t *testing.T) {
	s := Start(t, Options{TLS: &tls.Config{}, Compression: true, Subprotocols: []string{"v1"}})
	d := &websocket.Dialer{TLSClientConfig: s.Client().Transport.(*http.Transport).TLSClientConfig, EnableCompression: true, Subprotocols: []string{"v1"}}
	var cs []*websocket.Conn
	for i := range 3 {
		cs = append(cs, dial(t, s, "/", d))
		// The server counts a connection after its handler ran: wait, so
		// that its oldest are the first dialled (a busy host may run the
		// handlers in another order).
		for deadline := time.Now().Add(10 * time.Second); s.Live() != int64(i+1) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	if cs[0].Subprotocol() != "v1" {
		t.Errorf("subprotocol %q, want v1", cs[0].Subprotocol())
	}
	msg := strings.Repeat("squeeze ", 100)
	send(t, cs[2], websocket.TextMessage, msg)
	expect(t, cs[2], websocket.TextMessage, msg)
	s.Drop(2)
	for i, c := range cs[:2] {
		if code := closeCode(c); code != websocket.CloseAbnormalClosure {
			t.Errorf("dropped connection %d: close code %d, want none (1006)", i, code)
		}
	}
	send(t, cs[2], websocket.BinaryMessage, msg)
	_, got, err := cs[2].ReadMessage()
	if err != nil || !bytes.Equal(got, []byte(msg)) {
		t.Fatalf("the connection not dropped: %v", err)
	}
	for s.Live() != 1 {
		time.Sleep(time.Millisecond)
	}
}
