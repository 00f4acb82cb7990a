package testserver

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// EchoServer is an echo Server whose faults a test sets as fields, and
// that counts what it received: the shape the client's tests and the
// phase kinds' tests bend it into most. The zero EchoServer echoes every
// message at once.
type EchoServer struct {
	CorruptAt  atomic.Int64  // 1-based message number (over all connections) whose echo gets one byte flipped; 0 = none
	CloseAfter int           // each connection sends a close frame (1000) after this many echoes; 0 = never
	DropAfter  int           // each connection closes its TCP socket after this many echoes; 0 = never
	SilentFrom int64         // message numbers >= this get no echo; 0 = all answered
	Delay      time.Duration // before each echo

	Msgs  atomic.Int64 // messages received
	Conns atomic.Int64 // upgrade requests (the tests' handshakes all succeed)
	srv   *Server
}

// Start serves s until the test ends and returns its host:port.
func (s *EchoServer) Start(t testing.TB) string {
	t.Helper()
	s.srv = Start(t, Options{Delay: s.Delay, Reply: s.reply,
		Check: func(*http.Request) error { s.Conns.Add(1); return nil }})
	return s.srv.Addr()
}

// reply applies the faults to message id, the n-th of its connection.
func (s *EchoServer) reply(id int64, n int, msg []byte) Action {
	s.Msgs.Add(1)
	if s.SilentFrom > 0 && id >= s.SilentFrom {
		return Ignore
	}
	if id == s.CorruptAt.Load() && len(msg) > 0 {
		msg[len(msg)/2] ^= 0x20
	}
	switch {
	case s.CloseAfter > 0 && n >= s.CloseAfter:
		return EchoClose
	case s.DropAfter > 0 && n >= s.DropAfter:
		return EchoDrop
	}
	return Echo
}
