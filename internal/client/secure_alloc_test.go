package client

import (
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wsplan/wsplan/internal/pmdeflate"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/wstls"
)

// secureRig drives one loop synchronously over a socketpair, like
// pathRig, with TLS and/or permessage-deflate on the connection. The peer
// is a crypto/tls server (or the raw socket) that writes one echo each
// time roundTrip asks; it never reads, so the client's frames pile up in
// the socket buffer (sized for the messages a test sends).
type secureRig struct {
	l      *Loop
	c      *Conn
	ask    chan struct{}
	done   chan error
	stop   chan struct{}
	drainc chan struct{}
}

// newSecureRig sets up the rig; withTLS runs a TLS 1.3 handshake first,
// deflate marks permessage-deflate negotiated (no context takeover): the
// client sends its pre-computed compressed frame and the peer answers
// with a compressed echo.
func newSecureRig(tb testing.TB, withTLS, deflate bool) *secureRig {
	tb.Helper()
	l, c, peer := loopPair(tb)
	p, err := MakeKindPayload("text", 1024, true, nil) // chat-like: deflate has work to do
	if err != nil {
		tb.Fatal(err)
	}
	echo := testserver.ServerFrame(true, OpText, p)
	if deflate {
		np := pmdeflate.Params{ClientNoContextTakeover: true, ServerNoContextTakeover: true}
		z := pmdeflate.Precompute(np, p)
		echo = testserver.ServerFrame(true, OpText, z)
		echo[0] |= Rsv1
		c.Sec = &connSec{Deflate: true, WindowBits: pmdeflate.MaxWindowBits}
		c.Sec.dec.Init(&l.inflater, np, maxPayload)
		c.dec.deflate = true
	}
	r := &secureRig{l: l, c: c, ask: make(chan struct{}), done: make(chan error), stop: make(chan struct{}), drainc: make(chan struct{})}
	write := func(b []byte) error { _, err := unix.Write(peer, b); return err }
	buf := make([]byte, 256<<10)
	drain := func() {
		for {
			if n, err := unix.Read(peer, buf); n <= 0 || err != nil {
				return
			}
		}
	}
	var srv *tls.Conn
	if withTLS {
		cfg, caFile := runCA(tb, tls.VersionTLS13)
		f := os.NewFile(uintptr(peer), "peer")
		var nc net.Conn
		nc, err = net.FileConn(f)
		f.Close()
		if err != nil {
			tb.Fatal(err)
		}
		srv = tls.Server(nc, cfg)
		hs := make(chan error, 1)
		go func() { hs <- srv.Handshake() }()
		ccfg, err := wstls.ClientConfig(wstls.ClientOptions{CAFile: caFile, ServerName: "127.0.0.1"})
		if err != nil {
			tb.Fatal(err)
		}
		if c.Sec == nil {
			c.Sec = &connSec{}
		}
		c.Sec.tls = wstls.NewClient(ccfg)
		clientHandshake(tb, c.fd, c.Sec.tls)
		if err := <-hs; err != nil {
			tb.Fatal(err)
		}
		write = func(b []byte) error { _, err := srv.Write(b); return err }
		drain = func() {
			// A read timeout leaves a tls.Conn usable (a temporary error).
			_ = srv.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			for {
				if _, err := srv.Read(buf); err != nil {
					return
				}
			}
		}
	}
	go func() {
		for {
			select {
			case <-r.ask:
				r.done <- write(echo)
			case <-r.drainc:
				drain()
				r.done <- nil
			case <-r.stop:
				return
			}
		}
	}()
	startReply(l, c, OpText, p)
	tb.Cleanup(func() {
		close(r.stop)
		if l.ph != nil {
			l.ph.Finish(l, true, l.Now())
			<-l.results
		}
		l.shutdown()
		if srv != nil {
			srv.Close()
		} else {
			unix.Close(peer)
		}
	})
	return r
}

// clientHandshake runs a wstls handshake on a non-blocking fd.
func clientHandshake(tb testing.TB, fd int32, s *wstls.Session) {
	tb.Helper()
	buf := make([]byte, 64<<10)
	var in []byte
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		out, done, err := s.Handshake(nil, in)
		if err != nil {
			tb.Fatal(err)
		}
		for len(out) > 0 {
			n, err := unix.Write(int(fd), out)
			if err != nil && err != unix.EAGAIN {
				tb.Fatal(err)
			}
			out = out[max(n, 0):]
		}
		if done {
			return
		}
		in = nil
		for in == nil && time.Now().Before(deadline) {
			n, err := unix.Read(int(fd), buf)
			if err == unix.EAGAIN {
				time.Sleep(time.Millisecond)
				continue
			}
			if err != nil || n == 0 {
				tb.Fatalf("handshake read: %d, %v", n, err)
			}
			in = buf[:n]
		}
	}
	tb.Fatal("handshake timed out")
}

// roundTrip has the peer write one echo and the client read it (and send
// its next message).
func (r *secureRig) roundTrip(tb testing.TB) {
	r.ask <- struct{}{}
	if err := <-r.done; err != nil {
		tb.Fatal(err)
	}
	r.l.ReadFrames(r.c)
}

// drain has the peer read what the client sent so far.
func (r *secureRig) drain(tb testing.TB) {
	r.drainc <- struct{}{}
	if err := <-r.done; err != nil {
		tb.Fatal(err)
	}
}

func (r *secureRig) echo() *replyRun { return r.l.ph.(*replyRun) }

// TestSecureEchoPathAllocs proves the per-message path allocates nothing
// with TLS, with permessage-deflate, and with both (the peer's crypto/tls
// writes are counted too: they allocate nothing either).
func TestSecureEchoPathAllocs(t *testing.T) {
	for _, tc := range []struct {
		name         string
		tls, deflate bool
	}{{"tls", true, false}, {"deflate", false, true}, {"tls+deflate", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newSecureRig(t, tc.tls, tc.deflate)
			for i := 0; i < 10; i++ {
				r.roundTrip(t)
			}
			before := r.echo().part.Success
			allocs := testing.AllocsPerRun(500, func() { r.roundTrip(t) })
			if allocs != 0 {
				t.Errorf("%v allocations per echo, want 0", allocs)
			}
			if got := r.echo().part.Success - before; got != 501 || r.echo().part.Failed != 0 {
				t.Errorf("%d successful echoes (want 501), errors %v", got, r.echo().part.Errors)
			}
		})
	}
}

// BenchmarkSecureEchoPath: CPU per echo through the per-message path,
// plain vs TLS vs deflate, the peer's writes included.
func BenchmarkSecureEchoPath(b *testing.B) {
	for _, tc := range []struct {
		name         string
		tls, deflate bool
	}{{"plain", false, false}, {"tls", true, false}, {"deflate", false, true}, {"tls+deflate", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			r := newSecureRig(b, tc.tls, tc.deflate)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			n := 0
			for b.Loop() {
				r.roundTrip(b)
				n++
				if n%2000 == 0 { // the peer never reads: empty its socket buffer now and then
					b.StopTimer()
					r.drain(b)
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			if r.echo().part.Failed != 0 {
				b.Fatalf("failures: %v", r.echo().part.Errors)
			}
		})
	}
}
