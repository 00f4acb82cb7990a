package echo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/clienttest"
	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

// TestParamErrors: every bad key at once, and a concurrency over the
// connections open.
func TestParamErrors(t *testing.T) {
	c := clienttest.NewClient(t, client.Options{Targets: []string{testserver.ClosedAddr(t)}})
	_, err := client.RunAs[Result](c, t.Context(), &Params{Total: 0, Concurrency: 0, Payload: new(units.Size(-1)), Warmup: -1, Timeout: -1, Deadline: -1}, nil)
	want := "client: echo: total: must be > 0, got 0\nconcurrency: must be > 0, got 0\npayload: must be >= 0, got -1\nwarmup: must be >= 0, got -1\ntimeout: must be > 0, got -1ns\ndeadline: must be >= 0, got -1ns"
	if err == nil || err.Error() != want {
		t.Errorf("echo error:\n%v\nwant\n%s", err, want)
	}
	_, err = client.RunAs[Result](c, t.Context(), &Params{Total: 1, Concurrency: 1}, nil)
	want = "client: echo: concurrency 1 exceeds the 0 open connections: open more in a connect phase or lower concurrency"
	if err == nil || err.Error() != want {
		t.Errorf("echo error:\n%v\nwant\n%s", err, want)
	}
}

func TestEchoVerify(t *testing.T) {
	s := &testserver.EchoServer{}
	addr := s.Start(t)
	for _, loops := range []int{1, 2} {
		for _, size := range []int{0, 1, 125, 126, 1024, 65535, 65536, 300000} {
			for _, text := range []bool{false, true} {
				t.Run(fmt.Sprintf("loops=%d/size=%d/text=%v", loops, size, text), func(t *testing.T) {
					c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: loops})
					clienttest.MustConnect(t, c, 12)
					total := int64(600)
					if size > 60000 {
						total = 60
					}
					var pr client.Progress
					res, err := client.RunAs[Result](c, t.Context(), &Params{Total: total, Concurrency: 10, Payload: new(units.Size(size)), Text: text, Verify: new(true), Warmup: 20}, &pr)
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
	s := &testserver.EchoServer{}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 5)
	res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 500, Warmup: 100, Concurrency: 5, Payload: new(units.Size(16))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Success != 500 || res.Latency.TotalCount() != 500 {
		t.Errorf("success %d, histogram %d; want 500 (warm-up excluded)", res.Success, res.Latency.TotalCount())
	}
	if got := s.Msgs.Load(); got != 600 {
		t.Errorf("server saw %d messages, want 600", got)
	}
}

func TestEchoCorruptByte(t *testing.T) {
	s := &testserver.EchoServer{}
	s.CorruptAt.Store(50)
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 8)
	res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 400, Concurrency: 8, Payload: new(units.Size(1024)), Verify: new(true)}, nil)
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
	s.CorruptAt.Store(s.Msgs.Load() + 10)
	res, err = client.RunAs[Result](c, t.Context(), &Params{Total: 100, Concurrency: 8, Payload: new(units.Size(1024)), Verify: new(false)}, nil)
	if err != nil || res.Success != 100 {
		t.Errorf("unverified: %+v, %v; want 100 successes", res, err)
	}
}

func TestEchoServerCloses(t *testing.T) {
	for _, tt := range []struct {
		name    string
		server  *testserver.EchoServer
		reasons []string // one of them per connection
	}{
		{"close frame", &testserver.EchoServer{CloseAfter: 5}, []string{"server close 1000"}},
		// The server closes with the 6th message unread: an RST, or a FIN
		// if the close won the race.
		{"tcp close", &testserver.EchoServer{DropAfter: 5}, []string{"eof", "read: connection reset by peer"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.server.Start(t)
			c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
			clienttest.MustConnect(t, c, 10)
			res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 200, Concurrency: 10, Payload: new(units.Size(100)), Verify: new(true)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Each connection echoes 5 messages, then is closed while its
			// 6th is in flight.
			n := int64(0)
			for _, r := range tt.reasons {
				n += res.Errors[client.Reason(r)]
			}
			if res.Success != 50 || res.Failed != 10 || n != 10 {
				t.Errorf("success %d failed %d errors %v; want 50, 10, 10 x %q", res.Success, res.Failed, res.Errors, tt.reasons)
			}
			if res.Stopped != client.StopNoConnections {
				t.Errorf("stopped %q, want %q", res.Stopped, client.StopNoConnections)
			}
			if c.Conns() != 0 {
				t.Errorf("Conns() = %d, want 0", c.Conns())
			}
		})
	}
}

func TestEchoReplacesLostConnections(t *testing.T) {
	s := &testserver.EchoServer{CloseAfter: 4}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 20)
	res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 75, Concurrency: 5, Payload: new(units.Size(10))}, nil)
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
			_, op, payload, err := testserver.ReadClientFrame(r)
			if err != nil {
				return
			}
			switch op {
			case 0xA:
				if string(payload) == "are you there" {
					pongs.Add(1)
				}
				continue
			case client.OpClose:
				return
			}
			var out []byte
			for i, first := 0, true; first || i < len(payload); first = false {
				k := min(len(payload)-i, 300)
				fop := byte(0x0)
				if first {
					fop = op
				}
				out = append(out, testserver.ServerFrame(i+k == len(payload), fop, payload[i:i+k])...)
				if first {
					out = append(out, testserver.ServerFrame(true, client.OpPing, []byte("are you there"))...)
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
	s := &testserver.RawServer{Handle: fragmentingEcho(&pongs)}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 4)
	for _, size := range []int{0, 10, 1024, 5000} {
		before := pongs.Load()
		res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 40, Concurrency: 4, Payload: new(units.Size(size)), Verify: new(true)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Success != 40 || res.Failed != 0 {
			t.Fatalf("size %d: success %d failed %d errors %v; want 40, 0", size, res.Success, res.Failed, res.Errors)
		}
		// Pongs may trail the echoes a little.
		testenv.WaitFor(t, "pongs", func() bool { return pongs.Load()-before == 40 })
	}
}

func TestPingInHandshakeResponse(t *testing.T) {
	// The 101 response and a ping arrive in one segment: the bytes after
	// the response head start the frame stream.
	var pongs atomic.Int64
	s := &testserver.RawServer{Handshake: func(c net.Conn, r *bufio.Reader) {
		if err := testserver.ServerHandshake(c, r, testserver.ServerFrame(true, client.OpPing, []byte("are you there"))); err != nil {
			return
		}
		fragmentingEcho(&pongs)(c, r)
	}}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 3)
	testenv.WaitFor(t, "pongs", func() bool { return pongs.Load() == 3 })
	res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 30, Concurrency: 3, Payload: new(units.Size(500)), Verify: new(true)}, nil)
	if err != nil || res.Success != 30 {
		t.Fatalf("echo after the ping: %+v %v, errors %v", res, err, res.Errors)
	}
}

func TestEchoTimeout(t *testing.T) {
	s := &testserver.EchoServer{SilentFrom: 21} // 20 echoes, then silence
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 4)
	start := time.Now()
	res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 100, Concurrency: 4, Payload: new(units.Size(64)), Timeout: units.Duration(200 * time.Millisecond)}, nil)
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
	if c.Conns() != 0 || res.Stopped != client.StopNoConnections {
		t.Errorf("Conns() = %d, stopped %q; want 0, %q", c.Conns(), res.Stopped, client.StopNoConnections)
	}
}

func TestEchoCancel(t *testing.T) {
	s := &testserver.EchoServer{SilentFrom: 1001}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}, Loops: 2})
	clienttest.MustConnect(t, c, 10)
	// Cancel once every connection has a message the server will never
	// answer in flight (1010 received): by then the client has read the
	// 1000 echoes, however slow the host.
	ctx, cancel := context.WithCancel(t.Context())
	var cancelled atomic.Int64
	go func() {
		for deadline := time.Now().Add(30 * time.Second); s.Msgs.Load() < 1010 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancelled.Store(time.Now().UnixNano())
		cancel()
	}()
	res, err := client.RunAs[Result](c, ctx, &Params{Total: 1_000_000, Concurrency: 10, Payload: new(units.Size(64))}, nil)
	late := time.Since(time.Unix(0, cancelled.Load()))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	// Prompt: not after the 10 s echo timeout of the unanswered messages.
	if late > time.Second {
		t.Errorf("returned %v after the cancel, want < 1s", late)
	}
	if res.Stopped != client.StopCanceled || res.Success != 1000 || res.Failed != 0 {
		t.Errorf("result %+v; want 1000 successes, stopped %q", res, client.StopCanceled)
	}
	if c.Conns() != 10 {
		t.Errorf("Conns() = %d, want 10: a cancel keeps connections", c.Conns())
	}
}

func TestEchoDeadline(t *testing.T) {
	s := &testserver.EchoServer{Delay: time.Millisecond}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 5)
	start := time.Now()
	res, err := client.RunAs[Result](c, t.Context(), &Params{Total: 1_000_000, Concurrency: 5, Payload: new(units.Size(64)), Deadline: units.Duration(200 * time.Millisecond)}, nil)
	used := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != client.StopDeadline || res.Success == 0 || res.Success >= 1_000_000 {
		t.Errorf("result %+v; want some successes, stopped %q", res, client.StopDeadline)
	}
	if used > 300*time.Millisecond {
		t.Errorf("phase took %v, want about 200ms", used)
	}
}

func TestLateEchoesDiscarded(t *testing.T) {
	// Stop a phase while echoes are in flight, then run another with
	// verification: the late echoes of the first must not be taken for
	// echoes of the second (whose payload differs in size).
	s := &testserver.EchoServer{Delay: 20 * time.Millisecond}
	addr := s.Start(t)
	c := clienttest.NewClient(t, client.Options{Targets: []string{addr}})
	clienttest.MustConnect(t, c, 6)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	res, err := client.RunAs[Result](c, ctx, &Params{Total: 1000, Concurrency: 6, Payload: new(units.Size(100))}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || res.Stopped != client.StopCanceled {
		t.Fatalf("first phase: %+v, %v; want a canceled phase", res, err)
	}
	res, err = client.RunAs[Result](c, t.Context(), &Params{Total: 30, Concurrency: 6, Payload: new(units.Size(200)), Verify: new(true)}, nil)
	if err != nil || res.Success != 30 || res.Failed != 0 {
		t.Fatalf("second phase: %+v, %v, errors %v; want 30 successes", res, err, res.Errors)
	}
}
