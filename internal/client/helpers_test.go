package client

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// echoServer is a gorilla/websocket echo server on 127.0.0.1 whose
// behaviour tests can bend (internal/testserver with these faults).
type echoServer struct {
	corruptAt  atomic.Int64  // 1-based message number (over all connections) whose echo gets one byte flipped; 0 = none
	closeAfter int           // each connection sends a close frame (1000) after this many echoes; 0 = never
	dropAfter  int           // each connection closes its TCP socket after this many echoes; 0 = never
	silentFrom int64         // message numbers >= this get no echo; 0 = all answered
	delay      time.Duration // before each echo

	msgs  atomic.Int64 // messages received
	conns atomic.Int64 // upgrade requests (the tests' handshakes all succeed)
	srv   *testserver.Server
}

// start serves s until the test ends and returns its host:port.
func (s *echoServer) start(t testing.TB) string {
	t.Helper()
	s.srv = testserver.Start(t, testserver.Options{Delay: s.delay, Reply: s.reply,
		Check: func(*http.Request) error { s.conns.Add(1); return nil }})
	return s.srv.Addr()
}

// reply applies the faults to message id, the n-th of its connection.
func (s *echoServer) reply(id int64, n int, msg []byte) testserver.Action {
	s.msgs.Add(1)
	if s.silentFrom > 0 && id >= s.silentFrom {
		return testserver.Ignore
	}
	if id == s.corruptAt.Load() && len(msg) > 0 {
		msg[len(msg)/2] ^= 0x20
	}
	switch {
	case s.closeAfter > 0 && n >= s.closeAfter:
		return testserver.EchoClose
	case s.dropAfter > 0 && n >= s.dropAfter:
		return testserver.EchoDrop
	}
	return testserver.Echo
}

// rawServer accepts TCP connections on 127.0.0.1 (or addr), does the
// WebSocket handshake by hand unless handshake is set, and runs handle on
// each connection in its own goroutine. Everything stops at test cleanup.
type rawServer struct {
	network   string
	addr      string
	handshake func(c net.Conn, r *bufio.Reader) // replaces the standard handshake
	handle    func(c net.Conn, r *bufio.Reader)

	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func (s *rawServer) start(t testing.TB) string {
	t.Helper()
	network, addr := s.network, s.addr
	if network == "" {
		network = "tcp4"
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				if s.handshake != nil {
					s.handshake(c, r)
					return
				}
				if err := serverHandshake(c, r, nil); err != nil {
					return
				}
				if s.handle != nil {
					s.handle(c, r)
				}
			}()
		}
	}()
	t.Cleanup(s.stop)
	return ln.Addr().String()
}

func (s *rawServer) stop() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// serverHandshake reads an upgrade request and answers 101, followed by
// extra bytes in the same write.
func serverHandshake(c net.Conn, r *bufio.Reader, extra []byte) error {
	req, err := http.ReadRequest(r)
	if err != nil {
		return err
	}
	key := req.Header.Get("Sec-WebSocket-Key")
	if key == "" || !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		return errors.New("not an upgrade")
	}
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + testAccept(key) + "\r\n\r\n"
	_, err = c.Write(append([]byte(resp), extra...))
	return err
}

func testAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// readClientFrame reads one client frame, checking that it is masked.
func readClientFrame(r io.Reader) (fin bool, op byte, payload []byte, err error) {
	var h [14]byte
	if _, err := io.ReadFull(r, h[:2]); err != nil {
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0f
	if h[1]&0x80 == 0 {
		return false, 0, nil, errors.New("unmasked client frame")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		if _, err := io.ReadFull(r, h[:2]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(h[:2]))
	case 127:
		if _, err := io.ReadFull(r, h[:8]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(h[:8])
	}
	var key [4]byte
	if _, err := io.ReadFull(r, key[:]); err != nil {
		return false, 0, nil, err
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return false, 0, nil, err
	}
	for i := range payload {
		payload[i] ^= key[i%4]
	}
	return fin, op, payload, nil
}

// serverFrame encodes an unmasked server frame.
func serverFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	b := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// countFDs counts this process's open file descriptors.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// newClient creates a client that is closed at test cleanup.
func newClient(t testing.TB, opts Options) *Client {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mustConnect opens n connections and fails the test unless all open.
func mustConnect(t testing.TB, c *Client, n int) {
	t.Helper()
	res, err := c.Connect(t.Context(), ConnectParams{Connections: n, Concurrency: 64, Timeout: units.Duration(5 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != int64(n) {
		t.Fatalf("connect: success = %d, want %d (errors %v)", res.Success, n, res.Errors)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// retryTiming runs attempt up to three times while it reports a timing
// miss: a figure a loaded host can push out of bounds (sends that left
// late, bunching, wall time). Counts and sums are asserted by attempt
// itself, with t, on every try; only a timing miss on all three tries
// fails the test.
func retryTiming(t *testing.T, attempt func() string) {
	t.Helper()
	var miss string
	for i := range 3 {
		if miss = attempt(); miss == "" {
			return
		}
		t.Logf("try %d: %s (timing depends on the host's load: trying again)", i+1, miss)
	}
	t.Error(miss)
}
