// Package clienttest holds what the tests of internal/client's users
// share — the phase kinds' packages above all: an echo server whose
// faults a test sets, a client closed at cleanup, a pool of open
// connections. Only _test.go files import it (internal/layering's
// TestSupport rule). internal/client's own tests keep their copies in
// helpers_test.go: importing this package from them would be a cycle.
package clienttest

import (
	"golang.org/x/sys/unix"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// EchoServer is a gorilla/websocket echo server on 127.0.0.1 whose
// behaviour tests can bend (internal/testserver with these faults). The
// zero EchoServer echoes every message at once.
type EchoServer struct {
	CorruptAt  atomic.Int64  // 1-based message number (over all connections) whose echo gets one byte flipped; 0 = none
	CloseAfter int           // each connection sends a close frame (1000) after this many echoes; 0 = never
	DropAfter  int           // each connection closes its TCP socket after this many echoes; 0 = never
	SilentFrom int64         // message numbers >= this get no echo; 0 = all answered
	Delay      time.Duration // before each echo

	Msgs  atomic.Int64 // messages received
	Conns atomic.Int64 // upgrade requests (the tests' handshakes all succeed)
	srv   *testserver.Server
}

// Start serves s until the test ends and returns its host:port.
func (s *EchoServer) Start(t testing.TB) string {
	t.Helper()
	s.srv = testserver.Start(t, testserver.Options{Delay: s.Delay, Reply: s.reply,
		Check: func(*http.Request) error { s.Conns.Add(1); return nil }})
	return s.srv.Addr()
}

// reply applies the faults to message id, the n-th of its connection.
func (s *EchoServer) reply(id int64, n int, msg []byte) testserver.Action {
	s.Msgs.Add(1)
	if s.SilentFrom > 0 && id >= s.SilentFrom {
		return testserver.Ignore
	}
	if id == s.CorruptAt.Load() && len(msg) > 0 {
		msg[len(msg)/2] ^= 0x20
	}
	switch {
	case s.CloseAfter > 0 && n >= s.CloseAfter:
		return testserver.EchoClose
	case s.DropAfter > 0 && n >= s.DropAfter:
		return testserver.EchoDrop
	}
	return testserver.Echo
}

// NewClient creates a client that is closed at test cleanup.
func NewClient(t testing.TB, opts client.Options) *client.Client {
	t.Helper()
	c, err := client.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// MustConnect opens n connections and fails the test unless all open.
func MustConnect(t testing.TB, c *client.Client, n int) {
	t.Helper()
	res, err := c.Connect(t.Context(), client.ConnectParams{Connections: n, Concurrency: 64, Timeout: units.Duration(5 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != int64(n) {
		t.Fatalf("connect: success = %d, want %d (errors %v)", res.Success, n, res.Errors)
	}
}

// WaitFor polls cond for up to 5 s, and fails the test when it never
// holds.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// DrivenLoop returns a driven loop (client.NewDrivenLoop) with its one
// open connection and the socket pair's other end, all ended when the
// test does.
func DrivenLoop(tb testing.TB) (*client.Loop, *client.Conn, int) {
	tb.Helper()
	l, c, peer, err := client.NewDrivenLoop()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		l.StopDriven()
		unix.Close(peer)
	})
	return l, c, peer
}

// RetryTiming runs attempt up to three times while it reports a timing
// miss: a figure a loaded host can push out of bounds (sends that left
// late, bunching, wall time). Counts and sums are asserted by attempt
// itself, with t, on every try; only a timing miss on all three tries
// fails the test.
func RetryTiming(t *testing.T, attempt func() string) {
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
