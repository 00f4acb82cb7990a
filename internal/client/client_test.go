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
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

func TestConnect(t *testing.T) {
	s := &echoServer{}
	addr := s.start(t)
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
	s := &rawServer{handshake: func(c net.Conn, r *bufio.Reader) {
		_, _ = io.Copy(io.Discard, r) // hold the connection until the client or cleanup closes it
	}}
	addr := s.start(t)
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
			s := &rawServer{handshake: func(c net.Conn, r *bufio.Reader) {
				if _, err := http.ReadRequest(r); err != nil {
					return
				}
				if tt.answer != "" {
					_, _ = c.Write([]byte(tt.answer))
					_, _ = io.Copy(io.Discard, r) // wait for the client to give up
				}
			}}
			addr := s.start(t)
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
	s6 := &rawServer{network: "tcp6", addr: "[::1]:0", handle: func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(io.Discard, r) }}
	addr6 := s6.start(t)
	s4 := &rawServer{handle: func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(io.Discard, r) }}
	addr4 := s4.start(t)
	c := newClient(t, Options{Targets: []string{addr6, addr4}, SourceAddrs: []string{"::1", "127.0.0.1", "127.0.0.2"}})
	res, err := c.Connect(t.Context(), ConnectParams{Connections: 40, Concurrency: 8, Timeout: units.Duration(2 * time.Second)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != 40 {
		t.Fatalf("result %+v", res)
	}
	// Every IPv4 source was used.
	s4.mu.Lock()
	seen := map[string]int{}
	for _, c := range s4.conns {
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		seen[host]++
	}
	s4.mu.Unlock()
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
	_, err = c.Echo(t.Context(), EchoParams{Total: 0, Concurrency: 0, Payload: new(units.Size(-1)), Warmup: -1, Timeout: -1, Deadline: -1}, nil)
	want = "client: echo: total: must be > 0, got 0\nconcurrency: must be > 0, got 0\npayload: must be >= 0, got -1\nwarmup: must be >= 0, got -1\ntimeout: must be > 0, got -1ns\ndeadline: must be >= 0, got -1ns"
	if err == nil || err.Error() != want {
		t.Errorf("echo error:\n%v\nwant\n%s", err, want)
	}
	_, err = c.Echo(t.Context(), EchoParams{Total: 1, Concurrency: 1}, nil)
	want = "client: echo: concurrency 1 exceeds the 0 open connections: open more in a connect phase or lower concurrency"
	if err == nil || err.Error() != want {
		t.Errorf("echo error:\n%v\nwant\n%s", err, want)
	}
}

func TestEchoVerify(t *testing.T) {
	s := &echoServer{}
	addr := s.start(t)
	for _, loops := range []int{1, 2} {
		for _, size := range []int{0, 1, 125, 126, 1024, 65535, 65536, 300000} {
			for _, text := range []bool{false, true} {
				t.Run(fmt.Sprintf("loops=%d/size=%d/text=%v", loops, size, text), func(t *testing.T) {
					c := newClient(t, Options{Targets: []string{addr}, Loops: loops})
					mustConnect(t, c, 12)
					total := int64(600)
					if size > 60000 {
						total = 60
					}
					var pr Progress
					res, err := c.Echo(t.Context(), EchoParams{Total: total, Concurrency: 10, Payload: new(units.Size(size)), Text: text, Verify: new(true), Warmup: 20}, &pr)
					if err != nil {
						t.Fatal(err)
					}
					if res.Total != total || res.Success != total || res.Failed != 0 || len(res.Errors) != 0 || res.Stopped != "" {
						t.Fatalf("result %+v, errors %v", res, res.Errors)
					}
					if got := res.Latency.TotalCount(); got != total {
						t.Errorf("latency count = %d, want %d", got, total)
					}
					// The timeline, merged over the loops, adds up to the
					// phase: measured messages sent, echoes, the maximum.
					var sent, recv int64
					var worst time.Duration
					for _, s := range res.Seconds {
						sent, recv, worst = sent+s.Sent, recv+s.Recv, max(worst, s.Max)
					}
					if sent != total || recv != total || worst != time.Duration(res.Latency.Max()) || len(res.Seconds) == 0 {
						t.Errorf("timeline %+v: %d sent, %d received, max %v; want %d, %d, %v", res.Seconds, sent, recv, worst, total, total, time.Duration(res.Latency.Max()))
					}
					if pr.Total.Load() != total+20 || pr.Done.Load() != total+20 {
						t.Errorf("progress %d/%d, want %d/%d", pr.Done.Load(), pr.Total.Load(), total+20, total+20)
					}
				})
			}
		}
	}
}

func TestEchoWarmupNotCounted(t *testing.T) {
	s := &echoServer{}
	addr := s.start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	mustConnect(t, c, 5)
	res, err := c.Echo(t.Context(), EchoParams{Total: 500, Warmup: 100, Concurrency: 5, Payload: new(units.Size(16))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != 500 || res.Latency.TotalCount() != 500 {
		t.Errorf("success %d, histogram %d; want 500 (warm-up excluded)", res.Success, res.Latency.TotalCount())
	}
	if got := s.msgs.Load(); got != 600 {
		t.Errorf("server saw %d messages, want 600", got)
	}
}

func TestEchoCorruptByte(t *testing.T) {
	s := &echoServer{}
	s.corruptAt.Store(50)
	addr := s.start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	mustConnect(t, c, 8)
	res, err := c.Echo(t.Context(), EchoParams{Total: 400, Concurrency: 8, Payload: new(units.Size(1024)), Verify: new(true)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 1 || res.Success != 399 || res.Errors["payload mismatch"] != 1 {
		t.Errorf("success %d failed %d errors %v; want 399, 1, 1 x payload mismatch", res.Success, res.Failed, res.Errors)
	}
	if res.Latency.TotalCount() != 399 {
		t.Errorf("histogram count %d, want 399", res.Latency.TotalCount())
	}
	// Without Verify the corruption goes unnoticed: the length is right.
	s.corruptAt.Store(s.msgs.Load() + 10)
	res, err = c.Echo(t.Context(), EchoParams{Total: 100, Concurrency: 8, Payload: new(units.Size(1024)), Verify: new(false)}, nil)
	if err != nil || res.Success != 100 {
		t.Errorf("unverified: %+v, %v; want 100 successes", res, err)
	}
}

func TestEchoServerCloses(t *testing.T) {
	for _, tt := range []struct {
		name    string
		server  *echoServer
		reasons []string // one of them per connection
	}{
		{"close frame", &echoServer{closeAfter: 5}, []string{"server close 1000"}},
		// The server closes with the 6th message unread: an RST, or a FIN
		// if the close won the race.
		{"tcp close", &echoServer{dropAfter: 5}, []string{"eof", "read: connection reset by peer"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.server.start(t)
			c := newClient(t, Options{Targets: []string{addr}})
			mustConnect(t, c, 10)
			res, err := c.Echo(t.Context(), EchoParams{Total: 200, Concurrency: 10, Payload: new(units.Size(100)), Verify: new(true)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Each connection echoes 5 messages, then is closed while its
			// 6th is in flight.
			n := int64(0)
			for _, r := range tt.reasons {
				n += res.Errors[Reason(r)]
			}
			if res.Success != 50 || res.Failed != 10 || n != 10 {
				t.Errorf("success %d failed %d errors %v; want 50, 10, 10 x %q", res.Success, res.Failed, res.Errors, tt.reasons)
			}
			if res.Stopped != StopNoConnections {
				t.Errorf("stopped %q, want %q", res.Stopped, StopNoConnections)
			}
			if c.Conns() != 0 {
				t.Errorf("Conns() = %d, want 0", c.Conns())
			}
		})
	}
}

func TestEchoReplacesLostConnections(t *testing.T) {
	s := &echoServer{closeAfter: 4}
	addr := s.start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	mustConnect(t, c, 20)
	res, err := c.Echo(t.Context(), EchoParams{Total: 75, Concurrency: 5, Payload: new(units.Size(10))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 20 connections x (4 echoes + 1 failure) = 100 messages would be
	// possible: 75 fit, so the phase completes, standby connections
	// replacing the closed ones.
	if res.Success+res.Failed != 75 || res.Stopped != "" || res.Success < 55 {
		t.Errorf("result %+v errors %v; want 75 finished, at least 55 successes", res, res.Errors)
	}
	if c.Conns() >= 20 {
		t.Errorf("Conns() = %d, want fewer than 20", c.Conns())
	}
}

// fragmentingEcho echoes each message as several fragments with pings in
// between, writing a few bytes at a time, and counts the pongs it gets back
// with the right payload.
func fragmentingEcho(pongs *atomic.Int64) func(c net.Conn, r *bufio.Reader) {
	return func(c net.Conn, r *bufio.Reader) {
		for {
			_, op, payload, err := readClientFrame(r)
			if err != nil {
				return
			}
			switch op {
			case opPong:
				if string(payload) == "are you there" {
					pongs.Add(1)
				}
				continue
			case OpClose:
				return
			}
			var out []byte
			for i, first := 0, true; first || i < len(payload); first = false {
				k := min(len(payload)-i, 300)
				fop := byte(opContinuation)
				if first {
					fop = op
				}
				out = append(out, serverFrame(i+k == len(payload), fop, payload[i:i+k])...)
				if first {
					out = append(out, serverFrame(true, OpPing, []byte("are you there"))...)
				}
				i += k
			}
			for len(out) > 0 {
				k := min(len(out), 7)
				if _, err := c.Write(out[:k]); err != nil {
					return
				}
				out = out[k:]
			}
		}
	}
}

func TestEchoFragmentedSplitFrames(t *testing.T) {
	var pongs atomic.Int64
	s := &rawServer{handle: fragmentingEcho(&pongs)}
	addr := s.start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	mustConnect(t, c, 4)
	for _, size := range []int{0, 10, 1024, 5000} {
		before := pongs.Load()
		res, err := c.Echo(t.Context(), EchoParams{Total: 40, Concurrency: 4, Payload: new(units.Size(size)), Verify: new(true)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Success != 40 || res.Failed != 0 {
			t.Fatalf("size %d: success %d failed %d errors %v; want 40, 0", size, res.Success, res.Failed, res.Errors)
		}
		// Pongs may trail the echoes a little.
		waitFor(t, "pongs", func() bool { return pongs.Load()-before == 40 })
	}
}

func TestPingInHandshakeResponse(t *testing.T) {
	// The 101 response and a ping arrive in one segment: the bytes after
	// the response head start the frame stream.
	var pongs atomic.Int64
	s := &rawServer{handshake: func(c net.Conn, r *bufio.Reader) {
		if err := serverHandshake(c, r, serverFrame(true, OpPing, []byte("are you there"))); err != nil {
			return
		}
		fragmentingEcho(&pongs)(c, r)
	}}
	addr := s.start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	mustConnect(t, c, 3)
	waitFor(t, "pongs", func() bool { return pongs.Load() == 3 })
	res, err := c.Echo(t.Context(), EchoParams{Total: 30, Concurrency: 3, Payload: new(units.Size(500)), Verify: new(true)}, nil)
	if err != nil || res.Success != 30 {
		t.Fatalf("echo after the ping: %+v %v, errors %v", res, err, res.Errors)
	}
}

func TestEchoTimeout(t *testing.T) {
	s := &echoServer{silentFrom: 21} // 20 echoes, then silence
	addr := s.start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	mustConnect(t, c, 4)
	start := time.Now()
	res, err := c.Echo(t.Context(), EchoParams{Total: 100, Concurrency: 4, Payload: new(units.Size(64)), Timeout: units.Duration(200 * time.Millisecond)}, nil)
	used := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != 20 || res.Failed != 4 || res.Errors["timeout"] != 4 {
		t.Errorf("success %d failed %d errors %v; want 20, 4, 4 x timeout", res.Success, res.Failed, res.Errors)
	}
	if used < 200*time.Millisecond || used > time.Second {
		t.Errorf("phase took %v, want 200ms + a timer tick", used)
	}
	if c.Conns() != 0 || res.Stopped != StopNoConnections {
		t.Errorf("Conns() = %d, stopped %q; want 0, %q", c.Conns(), res.Stopped, StopNoConnections)
	}
}

func TestEchoCancel(t *testing.T) {
	s := &echoServer{silentFrom: 1001}
	addr := s.start(t)
	c := newClient(t, Options{Targets: []string{addr}, Loops: 2})
	mustConnect(t, c, 10)
	// Cancel once every connection has a message the server will never
	// answer in flight (1010 received): by then the client has read the
	// 1000 echoes, however slow the host.
	ctx, cancel := context.WithCancel(t.Context())
	var cancelled atomic.Int64
	go func() {
		for deadline := time.Now().Add(30 * time.Second); s.msgs.Load() < 1010 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancelled.Store(time.Now().UnixNano())
		cancel()
	}()
	res, err := c.Echo(ctx, EchoParams{Total: 1_000_000, Concurrency: 10, Payload: new(units.Size(64))}, nil)
	late := time.Since(time.Unix(0, cancelled.Load()))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	// Prompt: not after the 10 s echo timeout of the unanswered messages.
	if late > time.Second {
		t.Errorf("returned %v after the cancel, want < 1s", late)
	}
	if res.Stopped != StopCanceled || res.Success != 1000 || res.Failed != 0 {
		t.Errorf("result %+v; want 1000 successes, stopped %q", res, StopCanceled)
	}
	if c.Conns() != 10 {
		t.Errorf("Conns() = %d, want 10: a cancel keeps connections", c.Conns())
	}
}

func TestEchoDeadline(t *testing.T) {
	s := &echoServer{delay: time.Millisecond}
	addr := s.start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	mustConnect(t, c, 5)
	start := time.Now()
	res, err := c.Echo(t.Context(), EchoParams{Total: 1_000_000, Concurrency: 5, Payload: new(units.Size(64)), Deadline: units.Duration(200 * time.Millisecond)}, nil)
	used := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != StopDeadline || res.Success == 0 || res.Success >= 1_000_000 {
		t.Errorf("result %+v; want some successes, stopped %q", res, StopDeadline)
	}
	if used > 300*time.Millisecond {
		t.Errorf("phase took %v, want about 200ms", used)
	}
}

func TestLateEchoesDiscarded(t *testing.T) {
	// Stop a phase while echoes are in flight, then run another with
	// verification: the late echoes of the first must not be taken for
	// echoes of the second (whose payload differs in size).
	s := &echoServer{delay: 20 * time.Millisecond}
	addr := s.start(t)
	c := newClient(t, Options{Targets: []string{addr}})
	mustConnect(t, c, 6)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	res, err := c.Echo(ctx, EchoParams{Total: 1000, Concurrency: 6, Payload: new(units.Size(100))}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || res.Stopped != StopCanceled {
		t.Fatalf("first phase: %+v, %v; want a canceled phase", res, err)
	}
	res, err = c.Echo(t.Context(), EchoParams{Total: 30, Concurrency: 6, Payload: new(units.Size(200)), Verify: new(true)}, nil)
	if err != nil || res.Success != 30 || res.Failed != 0 {
		t.Fatalf("second phase: %+v, %v, errors %v; want 30 successes", res, err, res.Errors)
	}
}

func TestConnectCancel(t *testing.T) {
	s := &rawServer{handshake: func(c net.Conn, r *bufio.Reader) { _, _ = io.Copy(io.Discard, r) }}
	addr := s.start(t)
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
	s := &echoServer{}
	addr := s.start(t)
	// Warm up the runtime's own fds (netpoller) before counting.
	mustConnect(t, newClient(t, Options{Targets: []string{addr}}), 1)
	waitFor(t, "server connection", func() bool { return s.conns.Load() == 1 })
	before := countFDs(t)
	c, err := New(Options{Targets: []string{addr}, Loops: 3})
	if err != nil {
		t.Fatal(err)
	}
	mustConnect(t, c, 60)
	if _, err := c.Echo(t.Context(), EchoParams{Total: 300, Concurrency: 60, Payload: new(units.Size(100))}, nil); err != nil {
		t.Fatal(err)
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
	waitFor(t, "fds to be released", func() bool { return countFDs(t) == before })
	if c.Conns() != 0 {
		t.Errorf("Conns() = %d after Close, want 0", c.Conns())
	}
	if _, err := c.Echo(t.Context(), EchoParams{Total: 1, Concurrency: 1}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("echo after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Connect(t.Context(), ConnectParams{Connections: 1, Concurrency: 1, Timeout: units.Duration(time.Second)}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("connect after Close: %v, want ErrClosed", err)
	}
	goleak.VerifyNone(t, goleak.IgnoreCurrent())
}

func TestCloseDuringPhase(t *testing.T) {
	s := &echoServer{silentFrom: 1}
	addr := s.start(t)
	c, err := New(Options{Targets: []string{addr}, Loops: 2})
	if err != nil {
		t.Fatal(err)
	}
	mustConnect(t, c, 4)
	time.AfterFunc(100*time.Millisecond, func() { c.Close() })
	res, err := c.Echo(t.Context(), EchoParams{Total: 10, Concurrency: 4}, nil)
	if !errors.Is(err, ErrClosed) || res.Stopped != StopClosed {
		t.Errorf("%+v, %v; want stopped by Close", res, err)
	}
}
