package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

func TestConnect(t *testing.T) {
	s := &testserver.EchoServer{}
	addr := s.Start(t)
	for _, loops := range []int{1, 3} {
		t.Run(fmt.Sprintf("loops=%d", loops), func(t *testing.T) {
			c := newClient(t, Options{Targets: []string{addr}, Loops: loops, NoDelay: true})
			var pr Progress
			res, err := c.Connect(t.Context(), ConnectParams{Connections: 300, Concurrency: 40, Timeout: units.Duration(5 * time.Second)}, &pr)
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != 300 || res.Success != 300 || res.Failed != 0 || res.Retried != 0 || len(res.Errors) != 0 || res.Stopped != "" {
				t.Fatalf("result %+v, want 300 successes and nothing else", res)
			}
			if got := res.Latency.TotalCount(); got != 300 {
				t.Errorf("latency count = %d, want 300", got)
			}
			if res.Latency.Min() <= 0 || res.Latency.Max() > int64(res.Used) {
				t.Errorf("latency range [%d, %d] ns outside (0, used=%v]", res.Latency.Min(), res.Latency.Max(), res.Used)
			}
			if pr.Total.Load() != 300 || pr.Done.Load() != 300 {
				t.Errorf("progress %d/%d, want 300/300", pr.Done.Load(), pr.Total.Load())
			}
			if c.Conns() != 300 {
				t.Errorf("Conns() = %d, want 300", c.Conns())
			}
			// Connections accumulate over phases.
			res, err = c.Connect(t.Context(), ConnectParams{Connections: 50, Concurrency: 50, Timeout: units.Duration(5 * time.Second)}, nil)
			if err != nil || res.Success != 50 {
				t.Fatalf("second connect: %+v, %v", res, err)
			}
			if c.Conns() != 350 {
				t.Errorf("Conns() = %d after the second phase, want 350", c.Conns())
			}
		})
	}
}

func TestConnectRefused(t *testing.T) {
	c := newClient(t, Options{Targets: []string{testserver.ClosedAddr(t)}, Loops: 2})
	res, err := c.Connect(t.Context(), ConnectParams{Connections: 20, Concurrency: 5, Timeout: units.Duration(time.Second), Retries: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != 0 || res.Failed != 20 || res.Retried != 40 {
		t.Errorf("success %d failed %d retried %d, want 0, 20, 40", res.Success, res.Failed, res.Retried)
	}
	if got := res.Errors["connect: connection refused"]; got != 60 {
		t.Errorf("errors %v, want 60 x connect: connection refused", res.Errors)
	}
	if c.Conns() != 0 {
		t.Errorf("Conns() = %d, want 0", c.Conns())
	}
}

func TestConnectTimeout(t *testing.T) {
	// A server that accepts TCP but never answers the upgrade.
	s := &testserver.RawServer{Handshake: func(c net.Conn, r *bufio.Reader) {
		_, _ = io.Copy(io.Discard, r) // hold the connection until the client or cleanup closes it
	}}
	addr := s.Start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	start := time.Now()
	res, err := c.Connect(t.Context(), ConnectParams{Connections: 10, Concurrency: 10, Timeout: units.Duration(200 * time.Millisecond), Retries: 1}, nil)
	used := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 10 || res.Retried != 10 || res.Errors["timeout"] != 20 {
		t.Errorf("failed %d retried %d errors %v, want 10, 10, 20 x timeout", res.Failed, res.Retried, res.Errors)
	}
	if used < 400*time.Millisecond || used > 2*time.Second {
		t.Errorf("phase took %v, want about 2 x 200ms", used)
	}
}

func TestConnectBadResponses(t *testing.T) {
	tests := []struct {
		name   string
		answer string // raw response, "" = close the connection
		want   string
	}{
		{"404", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "bad status 404"},
		{"bad accept", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: AAAA\r\n\r\n", "bad accept"},
		{"no upgrade", "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n", "missing upgrade: websocket"},
		{"eof", "", "handshake eof"},
		{"too large", "HTTP/1.1 101 Switching Protocols\r\nX: " + strings.Repeat("y", 9000), "response too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &testserver.RawServer{Handshake: func(c net.Conn, r *bufio.Reader) {
				if _, err := http.ReadRequest(r); err != nil {
					return
				}
				if tt.answer != "" {
					_, _ = c.Write([]byte(tt.answer))
					_, _ = io.Copy(io.Discard, r) // wait for the client to give up
				}
			}}
			addr := s.Start(t)
			c := newClient(t, Options{Targets: []string{addr}})
			res, err := c.Connect(t.Context(), ConnectParams{Connections: 3, Concurrency: 3, Timeout: units.Duration(2 * time.Second), Retries: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed != 3 || res.Errors[Reason(tt.want)] != 3 {
				t.Errorf("failed %d, errors %v; want 3 x %q", res.Failed, res.Errors, tt.want)
			}
		})
	}
}

func TestConnectHTTPStatus(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	c := newClient(t, Options{Targets: []string{srv.Listener.Addr().String()}})
	res, err := c.Connect(t.Context(), ConnectParams{Connections: 4, Concurrency: 2, Timeout: units.Duration(2 * time.Second), Retries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 4 || res.Errors["bad status 404"] != 4 {
		t.Errorf("failed %d, errors %v; want 4 x bad status 404", res.Failed, res.Errors)
	}
}

func TestConnectIPv6AndSourceAddrs(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ln.Close()
	s6 := &testserver.RawServer{Network: "tcp6", Addr: "[::1]:0", Handle: func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(io.Discard, r) }}
	addr6 := s6.Start(t)
	s4 := &testserver.RawServer{Handle: func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(io.Discard, r) }}
	addr4 := s4.Start(t)
	c := newClient(t, Options{Targets: []string{addr6, addr4}, SourceAddrs: []string{"::1", "127.0.0.1", "127.0.0.2"}})
	res, err := c.Connect(t.Context(), ConnectParams{Connections: 40, Concurrency: 8, Timeout: units.Duration(2 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != 40 {
		t.Fatalf("result %+v", res)
	}
	// Every IPv4 source was used.
	seen := map[string]int{}
	for _, c := range s4.Conns() {
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		seen[host]++
	}
	if seen["127.0.0.1"] != 10 || seen["127.0.0.2"] != 10 {
		t.Errorf("IPv4 sources %v, want 10 each from 127.0.0.1 and 127.0.0.2", seen)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		opts Options
		want string
	}{
		{Options{}, "client: targets is empty: give at least one host:port"},
		{Options{Targets: []string{"127.0.0.1:1"}, Loops: -1}, "client: loops must be >= 0, got -1"},
		{Options{Targets: []string{"127.0.0.1:1"}, Path: "ws"}, `client: path "ws" must start with / and contain no spaces or line breaks`},
		{Options{Targets: []string{"127.0.0.1:1"}, SourceAddrs: []string{"localhost"}}, `client: source_addrs[0] "localhost": not an IP literal`},
		{Options{Targets: []string{"[::1]:1"}, SourceAddrs: []string{"127.0.0.1"}}, `client: targets[0] "[::1]:1" is IPv6 but source_addrs has no IPv6 address: add one or leave source_addrs empty`},
		{Options{Targets: []string{"127.0.0.1:1"}, SourceAddrs: []string{"::1"}}, `client: targets[0] "127.0.0.1:1" is IPv4 but source_addrs has no IPv4 address: add one or leave source_addrs empty`},
		{Options{Targets: []string{"127.0.0.1"}}, `client: targets[0] "127.0.0.1": address 127.0.0.1: missing port in address`},
	}
	for _, tt := range tests {
		c, err := New(tt.opts)
		if err == nil {
			c.Close()
			t.Errorf("%+v: no error, want %q", tt.opts, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%+v:\n got %q\nwant %q", tt.opts, err, tt.want)
		}
	}
}

func TestParamErrors(t *testing.T) {
	c := newClient(t, Options{Targets: []string{testserver.ClosedAddr(t)}})
	_, err := c.Connect(t.Context(), ConnectParams{Connections: 0, Concurrency: -1, Timeout: -1, Retries: -2}, nil)
	want := "client: connect: connections: must be > 0, got 0\nconcurrency: must be > 0, got -1\ntimeout: must be > 0, got -1ns"
	if err == nil || err.Error() != want {
		t.Errorf("connect error:\n%v\nwant\n%s", err, want)
	}
}

func TestConnectCancel(t *testing.T) {
	s := &testserver.RawServer{Handshake: func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(io.Discard, r) }}
	addr := s.Start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	res, err := c.Connect(ctx, ConnectParams{Connections: 50, Concurrency: 10, Timeout: units.Duration(10 * time.Second)}, nil)
	if !errors.Is(err, context.Canceled) || res.Stopped != StopCanceled {
		t.Errorf("%+v, %v; want a canceled phase", res, err)
	}
	// Canceled at 100 ms, it must not wait for the 10 s handshake timeout
	// (1 s leaves room for a loaded host).
	if d := time.Since(start); d > time.Second {
		t.Errorf("returned after %v, want ~100ms", d)
	}
	if res.Success != 0 || res.Failed != 0 {
		t.Errorf("success %d failed %d, want 0, 0: abandoned attempts count as neither", res.Success, res.Failed)
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	s := &testserver.EchoServer{}
	addr := s.Start(t)
	// Warm up the runtime's own fds (netpoller) before counting.
	mustConnect(t, newClient(t, Options{Targets: []string{addr}}), 1)
	testenv.WaitFor(t, "server connection", func() bool { return s.Conns.Load() == 1 })
	before := countFDs(t)
	c, err := New(Options{Targets: []string{addr}, Loops: 3})
	if err != nil {
		t.Fatal(err)
	}
	mustConnect(t, c, 60)
	if r, err := rounds(t.Context(), c, roundsParams{Rounds: 5, Payload: payloadOf(t, "random", 100)}); err != nil || r.Success != 300 {
		t.Fatalf("rounds: %+v %v", r, err)
	}
	if got := countFDs(t); got < before+60 {
		t.Fatalf("%d fds open with 60 connections, want at least %d", got, before+60)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The server side closes its ends when it sees the close frames.
	testenv.WaitFor(t, "fds to be released", func() bool { return countFDs(t) == before })
	if c.Conns() != 0 {
		t.Errorf("Conns() = %d after Close, want 0", c.Conns())
	}
	if _, err := rounds(t.Context(), c, roundsParams{Rounds: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("a phase after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Connect(t.Context(), ConnectParams{Connections: 1, Concurrency: 1, Timeout: units.Duration(time.Second)}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("connect after Close: %v, want ErrClosed", err)
	}
	goleak.VerifyNone(t, goleak.IgnoreCurrent())
}

func TestCloseDuringPhase(t *testing.T) {
	s := &testserver.EchoServer{SilentFrom: 1}
	addr := s.Start(t)
	c, err := New(Options{Targets: []string{addr}, Loops: 2})
	if err != nil {
		t.Fatal(err)
	}
	mustConnect(t, c, 4)
	time.AfterFunc(100*time.Millisecond, func() { c.Close() })
	res, err := rounds(t.Context(), c, roundsParams{Rounds: 3, Payload: payloadOf(t, "random", 16)})
	if !errors.Is(err, ErrClosed) || res.Stopped != StopClosed {
		t.Errorf("%+v, %v; want stopped by Close", res, err)
	}
}
