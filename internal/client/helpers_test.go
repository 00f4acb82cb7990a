package client

import (
	"os"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/units"
)

// The in-package helpers that take the client's own types. What needs no
// client is shared with the kinds' tests instead: the servers in
// internal/testserver (EchoServer, RawServer, ServerFrame, …) and
// internal/prototest, the waits in internal/testenv (WaitFor,
// RetryTiming). internal/clienttest, which imports the client, holds the
// kinds' versions of these (NewClient, MustConnect).

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
