// Package clienttest holds what the tests of internal/client's users
// share — the phase kinds' packages above all — that needs the client: a
// client closed at cleanup, connections opened, a driven loop, the
// kinds' Merge and allocation checks. Only _test.go files import it
// (internal/layering's TestSupport rule). internal/client's own tests
// cannot (a cycle) and keep their copies of the few helpers that take
// the client's types; what needs no client lives where both reach it:
// the servers in internal/testserver (EchoServer, RawServer and its
// frames) and internal/prototest, the waits in internal/testenv.
package clienttest

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/units"
)

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
