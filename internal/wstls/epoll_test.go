package wstls

import (
	"bytes"
	"crypto/tls"
	"net"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEpollDriven drives sessions as internal/client's loop will: one
// goroutine, non-blocking sockets, edge-triggered epoll; connect, then the
// handshake step by step (output written as it comes, input handed in as
// read), then echoes; every connection at once.
func TestEpollDriven(t *testing.T) {
	for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			srv := newTestServer(t, false, func(c *tls.Config) { c.MaxVersion = v })
			cfg := clientConfig(t, srv, true)
			st := epollEcho(t, srv, cfg, 50, 20)
			t.Logf("50 connections, 20 echoes each, %d resumed", st.resumed)
		})
	}
}

type epConn struct {
	fd        int
	s         *Session
	connected bool
	done      bool // handshake done
	got       []byte
	echoes    int
	pend      []byte // output not yet written
}

// stormStats is what epollEcho measured.
type stormStats struct {
	cpu, wall time.Duration   // loop thread CPU and wall time, connect to last echo
	hs        []time.Duration // each connection's HandshakeTime
	resumed   int
}

func epollEcho(t testing.TB, srv *testServer, cfg *tls.Config, nconn, echoes int) stormStats {
	// The client's loops are locked to their threads; the handshake
	// coroutines then run on the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var st stormStats
	start, cpu0 := time.Now(), threadCPU()
	addr := srv.ln.Addr().(*net.TCPAddr)
	sa := &unix.SockaddrInet4{Port: addr.Port}
	copy(sa.Addr[:], addr.IP.To4())
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(epfd)
	var pool Pool // a loop's, as internal/client has it
	defer pool.Close()
	conns := map[int]*epConn{}
	defer func() {
		for _, c := range conns {
			c.s.Abort()
			unix.Close(c.fd)
		}
	}()
	for i := 0; i < nconn; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
			t.Fatal(err)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLET, Fd: int32(fd)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			t.Fatal(err)
		}
		conns[fd] = &epConn{fd: fd, s: pool.NewClient(cfg)}
	}
	msg := payload(1500) // more than one TCP segment's worth, less than a record
	rbuf := make([]byte, 4096)
	// write sends what it can and keeps the rest for EPOLLOUT.
	write := func(c *epConn, b []byte) {
		c.pend = append(c.pend, b...)
		for len(c.pend) > 0 {
			n, e := rawWrite(c.fd, c.pend)
			if e == syscall.EAGAIN {
				return
			}
			if e != 0 {
				t.Fatalf("write: %v", e)
			}
			c.pend = c.pend[n:]
		}
	}
	send := func(c *epConn) {
		ct, err := c.s.Seal(nil, msg)
		if err != nil {
			t.Fatal(err)
		}
		write(c, ct)
	}
	finished := 0
	events := make([]unix.EpollEvent, 64)
	deadline := time.Now().Add(30 * time.Second)
	for finished < nconn {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections finished", finished, nconn)
		}
		k, err := unix.EpollWait(epfd, events, 1000)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < k; i++ {
			c := conns[int(events[i].Fd)]
			if events[i].Events&unix.EPOLLOUT != 0 {
				if !c.connected {
					if soerr, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soerr != 0 {
						t.Fatalf("connect: %v %v", err, unix.Errno(soerr))
					}
					c.connected = true
					out, _, err := c.s.Handshake(nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					write(c, out)
				} else {
					write(c, nil)
				}
			}
			for c.connected {
				n, e := rawRead(c.fd, rbuf)
				if e == syscall.EAGAIN {
					break
				}
				if e != 0 || n == 0 {
					t.Fatalf("read: %d %v", n, e)
				}
				in := rbuf[:n]
				if !c.done {
					out, done, err := c.s.Handshake(nil, in)
					if err != nil {
						t.Fatal(err)
					}
					write(c, out)
					if !done {
						continue
					}
					c.done = true
					if c.s.HandshakeTime() <= 0 || !c.s.State().Fast {
						t.Fatalf("state %+v, handshake time %v", c.s.State(), c.s.HandshakeTime())
					}
					send(c)
					in = nil
				}
				c.s.Feed(in)
				for {
					p, err := c.s.Next()
					if err != nil {
						t.Fatal(err)
					}
					if p == nil {
						break
					}
					c.got = append(c.got, p...)
				}
				for len(c.got) >= len(msg) {
					if !bytes.Equal(c.got[:len(msg)], msg) {
						t.Fatal("echo differs")
					}
					c.got = c.got[len(msg):]
					c.echoes++
					if c.echoes == echoes {
						finished++
					} else {
						send(c)
					}
				}
			}
		}
	}
	st.cpu, st.wall = threadCPU()-cpu0, time.Since(start)
	for _, c := range conns {
		if c.s.State().DidResume {
			st.resumed++
		}
		st.hs = append(st.hs, c.s.HandshakeTime())
	}
	return st
}

// BenchmarkHandshakeStorm opens 1,000 connections at once from one loop
// (the connect phase of a storm) and does one echo on each: client thread
// CPU per connection, TLS handshake p50/p99, connections per second. The
// echo server runs in this process on the other CPU.
func BenchmarkHandshakeStorm(b *testing.B) {
	for _, v := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		for _, resume := range []bool{false, true} {
			name := tls.VersionName(v)
			if resume {
				name += "-resumption"
			}
			b.Run(name, func(b *testing.B) {
				const n = 1000
				srv := newTestServer(b, false, func(c *tls.Config) { c.MaxVersion = v })
				cfg := clientConfig(b, srv, resume)
				if resume { // prime the cache, as an earlier phase would
					s, c := dialSession(b, srv, cfg, false)
					if err := echo(s, c, []byte("x"), 4096); err != nil {
						b.Fatal(err)
					}
				}
				var cpu, wall time.Duration
				var hs []time.Duration
				resumed := 0
				for i := 0; i < b.N; i++ {
					st := epollEcho(b, srv, cfg, n, 1)
					cpu += st.cpu
					wall += st.wall
					hs = append(hs, st.hs...)
					resumed += st.resumed
					srv.dropConns()
				}
				slices.Sort(hs)
				conns := float64(b.N * n)
				b.ReportMetric(float64(cpu.Nanoseconds())/conns, "cpu-ns/conn")
				b.ReportMetric(conns/wall.Seconds(), "conns/s")
				b.ReportMetric(float64(hs[len(hs)/2].Microseconds()), "tls-p50-µs")
				b.ReportMetric(float64(hs[len(hs)*99/100].Microseconds()), "tls-p99-µs")
				b.ReportMetric(float64(resumed)/conns, "resumed/conn")
			})
		}
	}
}
